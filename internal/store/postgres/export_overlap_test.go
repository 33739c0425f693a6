package postgres

// ClaimSchedulesSteps are the two statements of the schedule claim for a limit, to run
// in one transaction in this order, for the overlap race tests.
func ClaimSchedulesSteps(limit int) [2]string {
	return [2]string{claimSchedulesLockSQL(limit), sqlClaimSchedules}
}

// ScheduleClaimStripes is how many stripes the schedule claim walks.
const ScheduleClaimStripes = scheduleClaimStripes
