package postgres

import "context"

// SendWakeUpsTo has s call f with the queues of its own wake-ups (CreateTasks', the
// schedule claim's) instead of notifying, so that a test tells them from the insert
// trigger's NOTIFY. Call it before s sends any.
func SendWakeUpsTo(s *Store, f func(queues []string)) {
	s.wake.send = func(_ context.Context, queues []string) { f(queues) }
}

// ScheduleClaimSlots is how many claims of limit schedules work at once.
var ScheduleClaimSlots = scheduleClaimSlots
