package metrics

import (
	"context"

	"github.com/rotaqueue/rota/internal/store"
)

// CountEnqueued returns st with every task it creates counted in
// rota_tasks_enqueued_total: CreateTasks (API create and batch create), TriggerSchedule
// and the runs ClaimDueSchedules inserts. Counting at the store boundary catches every
// path that creates tasks in this process, whatever calls it. Idempotent hits
// (CreateResult.Existing) are not new tasks and are not counted; nothing is counted when
// a call fails, since the store then created nothing.
func (m *Metrics) CountEnqueued(st store.Store) store.Store {
	return &enqueueCounting{Store: st, m: m}
}

// enqueueCounting forwards every Store method, counting the tasks created.
type enqueueCounting struct {
	store.Store
	m *Metrics
}

func (s *enqueueCounting) CreateTasks(ctx context.Context, params []store.CreateParams) ([]store.CreateResult, error) {
	res, err := s.Store.CreateTasks(ctx, params)
	if err == nil {
		for _, r := range res {
			if !r.Existing {
				s.m.Enqueued(r.Task)
			}
		}
	}
	return res, err
}

func (s *enqueueCounting) TriggerSchedule(ctx context.Context, name string) (*store.Task, error) {
	t, err := s.Store.TriggerSchedule(ctx, name)
	if err == nil {
		s.m.Enqueued(t)
	}
	return t, err
}

func (s *enqueueCounting) ClaimDueSchedules(ctx context.Context, params store.ClaimSchedulesParams) ([]store.ScheduleClaim, error) {
	claims, err := s.Store.ClaimDueSchedules(ctx, params)
	if err == nil {
		for _, c := range claims {
			for _, t := range c.Runs {
				s.m.Enqueued(t)
			}
		}
	}
	return claims, err
}
