package postgres

// ClaimSchedulesSQL is the schedule claim statement for a limit, for the overlap race
// tests that run it inside a transaction they hold open.
var ClaimSchedulesSQL = claimSchedulesSQL
