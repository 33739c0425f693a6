package rota

import (
	"context"
	"fmt"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// Schedule is a cron schedule kept in the database: a 5-field cron spec (cronie
// semantics), an IANA time zone and the task each tick enqueues. The database computes
// every fire time (rota.next_cron_tick) and any number of servers claim due schedules
// without a leader; each tick runs exactly once.
type Schedule = store.Schedule

// ScheduleParams creates a schedule; its first run is the first tick after now.
type ScheduleParams = store.ScheduleParams

// ScheduleUpdate changes some fields of a schedule (nil fields stay).
type ScheduleUpdate = store.ScheduleUpdate

// TaskTemplate is what each run of a schedule enqueues.
type TaskTemplate = store.TaskTemplate

// CatchUp is what happens to ticks missed while no server claimed the schedule.
type CatchUp = store.CatchUp

// The catch-up policies.
const (
	CatchUpSkip = store.CatchUpSkip // no run for missed ticks
	CatchUpOne  = store.CatchUpOne  // one run for all missed ticks (the default)
	CatchUpAll  = store.CatchUpAll  // one run per missed tick, bounded per claim
)

// Overlap is what a tick does while the schedule's previous run has not finished
// (ScheduleParams.Overlap, ScheduleUpdate.Overlap).
type Overlap = store.Overlap

// The overlap policies.
const (
	OverlapAllow       = store.OverlapAllow       // run anyway (the default)
	OverlapSkip        = store.OverlapSkip        // no run; the tick is skipped and counted
	OverlapBufferOne   = store.OverlapBufferOne   // one run waits and starts when the running one ends
	OverlapCancelOther = store.OverlapCancelOther // cancel the running one and start the new run
)

// Schedule kinds (ScheduleParams.Kind): a task per tick (the default) or a flow per tick.
const (
	ScheduleKindTask = store.ScheduleKindTask
	ScheduleKindFlow = store.ScheduleKindFlow
)

// ScheduleFlow is the flow a schedule of kind flow starts at each tick
// (ScheduleParams.Flow, ScheduleUpdate.Flow): a flow's create params without an id or
// idempotency key (each run's key is schedule:<name>:<unix of the tick>). Every
// overlap policy applies; a run is unfinished while its flow is RUNNING, an
// OverlapBufferOne flow waits created but not started, and OverlapCancelOther cancels
// the running flow as CancelFlow does.
type ScheduleFlow = store.FlowParams

// ScheduleFlowStep is one step of a ScheduleFlow.
type ScheduleFlowStep = store.StepParams

// HeldRunAt is the ScheduledFor of an OverlapBufferOne run while it waits.
var HeldRunAt = store.HeldRunAt

// CreateSchedule stores a new schedule. An invalid spec or zone is an error wrapping
// ErrInvalid that names the field; a name in use is ErrConflict.
func (c *Client) CreateSchedule(ctx context.Context, p ScheduleParams) (*Schedule, error) {
	return wrapSchedule("create schedule " + p.Name)(c.store.CreateSchedule(ctx, p))
}

// Schedule returns one schedule, with its next fire time.
func (c *Client) Schedule(ctx context.Context, name string) (*Schedule, error) {
	return wrapSchedule("get schedule " + name)(c.store.GetSchedule(ctx, name))
}

// Schedules lists every schedule by name.
func (c *Client) Schedules(ctx context.Context) ([]*Schedule, error) {
	s, err := c.store.ListSchedules(ctx)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return s, nil
}

// UpdateSchedule changes a schedule; a new spec or zone recomputes the next fire time.
func (c *Client) UpdateSchedule(ctx context.Context, name string, u ScheduleUpdate) (*Schedule, error) {
	return wrapSchedule("update schedule " + name)(c.store.UpdateSchedule(ctx, name, u))
}

// DeleteSchedule removes a schedule; the tasks it created stay.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	if err := c.store.DeleteSchedule(ctx, name); err != nil {
		return fmt.Errorf("delete schedule %s: %w", name, err)
	}
	return nil
}

// PauseSchedule stops a schedule from firing.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*Schedule, error) {
	return wrapSchedule("pause schedule " + name)(c.store.PauseSchedule(ctx, name))
}

// ResumeSchedule lets it fire again from the next tick after now; ticks missed while
// paused never run.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*Schedule, error) {
	return wrapSchedule("resume schedule " + name)(c.store.ResumeSchedule(ctx, name))
}

// RescheduleSchedule sets the next fire time (in the past: it is due at once, and its
// catch-up policy decides what runs).
func (c *Client) RescheduleSchedule(ctx context.Context, name string, next time.Time) (*Schedule, error) {
	return wrapSchedule("reschedule schedule " + name)(c.store.RescheduleSchedule(ctx, name, next))
}

// TriggerSchedule enqueues one run now without moving the next fire time.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (*Task, error) {
	t, err := c.store.TriggerSchedule(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("trigger schedule %s: %w", name, err)
	}
	return t, nil
}

// TriggerScheduleFlow starts one flow of a kind flow schedule now, without moving the
// next fire time (TriggerSchedule is for kind task; each refuses the other kind with
// ErrInvalid).
func (c *Client) TriggerScheduleFlow(ctx context.Context, name string) (*store.Flow, error) {
	f, err := c.store.TriggerScheduleFlow(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("trigger schedule %s: %w", name, err)
	}
	return f, nil
}

// ScheduleRuns pages the tasks a schedule created, newest first.
func (c *Client) ScheduleRuns(ctx context.Context, name string, limit int, cursor string) (tasks []*Task, nextCursor string, err error) {
	tasks, nextCursor, err = c.store.ListScheduleRuns(ctx, store.ScheduleRunsParams{Name: name, Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", fmt.Errorf("list runs of schedule %s: %w", name, err)
	}
	return tasks, nextCursor, nil
}

// wrapSchedule adds op as context to a store call's error.
func wrapSchedule(op string) func(*Schedule, error) (*Schedule, error) {
	return func(s *Schedule, err error) (*Schedule, error) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		return s, nil
	}
}
