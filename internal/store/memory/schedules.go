package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/cron"
	"github.com/rotaqueue/rota/internal/store"
)

var _ store.ScheduleStore = (*Store)(nil)

// schedule is one row of what PostgreSQL keeps in rota.schedules, with its spec parsed
// and its zone loaded (internal/cron plays rota.next_cron_tick).
type schedule struct {
	sc   store.Schedule
	spec *cron.Spec
	loc  *time.Location
}

// never stands in for "no further tick" (a spec that stops firing); it is never due.
var never = time.Date(9999, 12, 31, 23, 59, 0, 0, time.UTC)

// next is the first tick strictly after t, at the store's precision.
func (sc *schedule) next(t time.Time) time.Time {
	n := sc.spec.Next(t, sc.loc)
	if n.IsZero() {
		return never
	}
	return dbTime(n)
}

// compileSchedule parses spec and loads tz, failing like rota.next_cron_tick: ErrInvalid
// naming the field.
func compileSchedule(spec, tz string, now time.Time) (*cron.Spec, *time.Location, error) {
	sp, err := cron.Parse(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: cron spec %q: %v", store.ErrInvalid, spec, err)
	}
	loc, err := cron.LoadLocation(tz) // the names rota.next_cron_tick accepts
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	if sp.Next(now, loc).IsZero() {
		return nil, nil, fmt.Errorf("%w: cron_spec %q never fires", store.ErrInvalid, spec)
	}
	return sp, loc, nil
}

func cloneSchedule(sc *store.Schedule) *store.Schedule {
	c := *sc
	c.Task.Payload = bytes.Clone(sc.Task.Payload)
	c.LastRunAt = cloneTime(sc.LastRunAt)
	c.LastEnqueuedAt = cloneTime(sc.LastEnqueuedAt)
	c.LastSkippedAt = cloneTime(sc.LastSkippedAt)
	c.CurrentRunID = cloneID(sc.CurrentRunID)
	c.WaitingRunID = cloneID(sc.WaitingRunID)
	c.Flow = store.CloneFlowParams(sc.Flow)
	return &c
}

func cloneID(id *uuid.UUID) *uuid.UUID {
	if id == nil {
		return nil
	}
	c := *id
	return &c
}

func (s *Store) lookupSchedule(op, name string) (*schedule, error) {
	row := s.schedules[name]
	if row == nil {
		return nil, fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return row, nil
}

// CreateSchedule adds a schedule; its first run is the first tick after now.
func (s *Store) CreateSchedule(ctx context.Context, params store.ScheduleParams) (*store.Schedule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := params
	p.Task.Payload = bytes.Clone(p.Task.Payload)
	if err := p.Normalize(); err != nil {
		return nil, fmt.Errorf("create schedule: %w", err)
	}
	op := fmt.Sprintf("create schedule %q", p.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	spec, loc, err := compileSchedule(p.CronSpec, p.Timezone, now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if s.schedules[p.Name] != nil {
		return nil, fmt.Errorf("%s: %w: a schedule named %q exists", op, store.ErrConflict, p.Name)
	}
	row := &schedule{spec: spec, loc: loc, sc: store.Schedule{
		Name:      p.Name,
		Kind:      p.Kind,
		CronSpec:  p.CronSpec,
		Timezone:  p.Timezone,
		Task:      p.Task,
		Flow:      store.CloneFlowParams(p.Flow),
		Enabled:   *p.Enabled,
		CatchUp:   p.CatchUp,
		Overlap:   p.Overlap,
		CreatedAt: now,
		UpdatedAt: now,
	}}
	row.sc.NextRunAt = row.next(now)
	s.schedules[p.Name] = row
	return cloneSchedule(&row.sc), nil
}

// GetSchedule returns one schedule, ErrNotFound when there is none.
func (s *Store) GetSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	row, err := s.lookupSchedule(fmt.Sprintf("get schedule %q", name), name)
	if err != nil {
		return nil, err
	}
	return cloneSchedule(&row.sc), nil
}

// ListSchedules returns every schedule ordered by name.
func (s *Store) ListSchedules(ctx context.Context) ([]*store.Schedule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*store.Schedule, 0, len(s.schedules))
	for _, row := range s.schedules {
		out = append(out, cloneSchedule(&row.sc))
	}
	slices.SortFunc(out, func(a, b *store.Schedule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateSchedule changes the fields update sets. A new spec or time zone, or enabling a
// disabled schedule, recomputes NextRunAt from now.
func (s *Store) UpdateSchedule(ctx context.Context, name string, update store.ScheduleUpdate) (*store.Schedule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("update schedule %q", name)
	u := update
	if u.Task != nil {
		tmpl := *u.Task
		tmpl.Payload = bytes.Clone(tmpl.Payload)
		u.Task = &tmpl
	}
	if err := u.Normalize(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	row, err := s.lookupSchedule(op, name)
	if err != nil {
		return nil, err
	}
	if err := u.CheckUpdateForKind(row.sc.Kind); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	now := s.clock()
	next := *row // the row as updated, committed only when everything is valid
	sc := &next.sc
	if u.CronSpec != nil {
		sc.CronSpec = *u.CronSpec
	}
	if u.Timezone != nil {
		sc.Timezone = *u.Timezone
	}
	recompute := u.CronSpec != nil || u.Timezone != nil || (u.Enabled != nil && *u.Enabled && !row.sc.Enabled)
	if u.CronSpec != nil || u.Timezone != nil {
		if next.spec, next.loc, err = compileSchedule(sc.CronSpec, sc.Timezone, now); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	if u.Task != nil {
		sc.Task = *u.Task
	}
	if u.Flow != nil {
		sc.Flow, sc.Task = store.CloneFlowParams(u.Flow), store.FlowPlaceholderTask(u.Flow)
	}
	if u.Enabled != nil {
		sc.Enabled = *u.Enabled
	}
	if u.CatchUp != nil {
		sc.CatchUp = *u.CatchUp
	}
	if u.Overlap != nil {
		sc.Overlap = *u.Overlap
	}
	if recompute {
		sc.NextRunAt = next.next(now)
	}
	sc.UpdatedAt = now
	*row = next
	return cloneSchedule(&row.sc), nil
}

// DeleteSchedule removes a schedule; the tasks and flows it created stay, but a buffered
// run still held (a task or a flow) is canceled (nothing would start it any more).
func (s *Store) DeleteSchedule(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	row, err := s.lookupSchedule(fmt.Sprintf("delete schedule %q", name), name)
	if err != nil {
		return err
	}
	delete(s.schedules, name)
	if row.sc.Kind == store.ScheduleKindFlow {
		if id := row.sc.WaitingRunID; id != nil && s.flows[*id] != nil { // a held flow
			s.stopFlow(s.flows[*id], store.FlowCanceled, s.clock())
		}
		return nil
	}
	if e := s.runEntry(row.sc.WaitingRunID); e != nil && e.task.Status == store.StatusPending {
		s.cancel(e, s.clock())
	}
	return nil
}

// runEntry is the task a run id names, or nil.
func (s *Store) runEntry(id *uuid.UUID) *entry {
	if id == nil {
		return nil
	}
	return s.tasks[*id]
}

// liveRun reports whether id names a task that has not finished.
func (s *Store) liveRun(id *uuid.UUID) bool {
	e := s.runEntry(id)
	return e != nil && !e.task.Status.Terminal()
}

// liveFlowRun reports whether id names a flow that is RUNNING (a kind flow schedule's
// current run).
func (s *Store) liveFlowRun(id *uuid.UUID) bool {
	if id == nil {
		return false
	}
	fe := s.flows[*id]
	return fe != nil && fe.flow.Status == store.FlowRunning
}

// scheduleRunEnded is rota.schedule_run_ended (migration 0017): t, a task that just
// finished, was perhaps a schedule's current run (its waiting run becomes current and
// due now) or its held waiting run (nothing waits any more). Callers hold s.mu.
func (s *Store) scheduleRunEnded(t *store.Task, now time.Time) {
	rest, ok := strings.CutPrefix(t.IdempotencyKey, "schedule:")
	if !ok {
		return
	}
	name, _, _ := strings.Cut(rest, ":")
	row := s.schedules[name]
	if row == nil {
		return
	}
	sc := &row.sc
	switch {
	case sc.CurrentRunID != nil && *sc.CurrentRunID == t.ID:
		sc.CurrentRunID, sc.WaitingRunID = sc.WaitingRunID, nil
		if e := s.runEntry(sc.CurrentRunID); e != nil && e.task.Status == store.StatusPending && e.task.ScheduledFor.Equal(store.HeldRunAt) {
			s.release(e, now)
		}
	case sc.WaitingRunID != nil && *sc.WaitingRunID == t.ID:
		sc.WaitingRunID = nil
	}
}

// scheduleFlowEnded is rota.schedule_flow_ended (migration 0029): fe, a flow that just
// ended, was perhaps a schedule's current run; its waiting (held) flow then becomes
// current and starts. A held flow that ends (canceled while held) stays named in
// WaitingRunID, as in PostgreSQL (the claim counts it waiting only while RUNNING).
// Callers hold s.mu.
func (s *Store) scheduleFlowEnded(fe *flowEntry, now time.Time) {
	rest, ok := strings.CutPrefix(fe.flow.IdempotencyKey, "schedule:")
	if !ok {
		return
	}
	name, _, _ := strings.Cut(rest, ":")
	row := s.schedules[name]
	if row == nil || row.sc.CurrentRunID == nil || *row.sc.CurrentRunID != fe.flow.ID {
		return
	}
	sc := &row.sc
	sc.CurrentRunID, sc.WaitingRunID = sc.WaitingRunID, nil
	if sc.CurrentRunID != nil {
		if held := s.flows[*sc.CurrentRunID]; held != nil {
			s.startFlow(held, now)
		}
	}
}

// release makes a held PENDING run due now and wakes its queue's workers.
func (s *Store) release(e *entry, now time.Time) {
	e.task.ScheduledFor = now
	e.task.UpdatedAt = now
	e.seq++ // its place in the claim order changed: the held item is stale
	cq := s.claimQueue(e.task.Queue, store.StatusPending)
	cq.push(claimItem{e: e, seq: e.seq, priority: e.task.Priority, at: e.task.ScheduledFor, id: e.task.ID}, now, cq.live)
	s.notify(map[string]bool{e.task.Queue: true})
}

// PauseSchedule disables a schedule.
func (s *Store) PauseSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	return s.scheduleWrite(ctx, fmt.Sprintf("pause schedule %q", name), name, func(row *schedule, now time.Time) {
		row.sc.Enabled = false
	})
}

// ResumeSchedule enables a disabled schedule from the first tick after now; an enabled
// schedule is returned unchanged.
func (s *Store) ResumeSchedule(ctx context.Context, name string) (*store.Schedule, error) {
	return s.scheduleWrite(ctx, fmt.Sprintf("resume schedule %q", name), name, func(row *schedule, now time.Time) {
		if !row.sc.Enabled {
			row.sc.Enabled = true
			row.sc.NextRunAt = row.next(now)
		}
	})
}

// RescheduleSchedule sets NextRunAt (a time in the past makes the schedule due now).
func (s *Store) RescheduleSchedule(ctx context.Context, name string, nextRunAt time.Time) (*store.Schedule, error) {
	op := fmt.Sprintf("reschedule schedule %q", name)
	if nextRunAt.IsZero() {
		return nil, fmt.Errorf("%s: %w: next_run_at is required", op, store.ErrInvalid)
	}
	return s.scheduleWrite(ctx, op, name, func(row *schedule, now time.Time) {
		row.sc.NextRunAt = dbTime(nextRunAt)
	})
}

func (s *Store) scheduleWrite(ctx context.Context, op, name string, mutate func(row *schedule, now time.Time)) (*store.Schedule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	row, err := s.lookupSchedule(op, name)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	mutate(row, now)
	row.sc.UpdatedAt = now
	return cloneSchedule(&row.sc), nil
}

// TriggerSchedule enqueues one run now, keyed by the store's clock, without moving
// NextRunAt. It works on a paused schedule too.
func (s *Store) TriggerSchedule(ctx context.Context, name string) (*store.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("trigger schedule %q", name)
	s.mu.Lock()
	defer s.mu.Unlock()
	row, err := s.lookupSchedule(op, name)
	if err != nil {
		return nil, err
	}
	if row.sc.Kind == store.ScheduleKindFlow {
		return nil, fmt.Errorf("%s: %w", op, store.ErrScheduleOfKindFlow)
	}
	now := s.clock()
	wake := map[string]bool{}
	task, _, err := s.insertRun(&row.sc.Task, store.ScheduleTriggerKey(name, now), now, now, wake)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	s.notify(wake)
	return task, nil
}

// TriggerScheduleFlow starts one flow of a kind flow schedule now, keyed by the store's
// clock, without moving NextRunAt. It works on a paused schedule too.
func (s *Store) TriggerScheduleFlow(ctx context.Context, name string) (*store.Flow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	op := fmt.Sprintf("trigger schedule %q", name)
	s.mu.Lock()
	defer s.mu.Unlock()
	row, err := s.lookupSchedule(op, name)
	if err != nil {
		return nil, err
	}
	if row.sc.Kind != store.ScheduleKindFlow {
		return nil, fmt.Errorf("%s: %w", op, store.ErrScheduleOfKindTask)
	}
	p := *store.CloneFlowParams(row.sc.Flow)
	p.IdempotencyKey = store.ScheduleTriggerKey(name, s.clock())
	if err := p.Normalize(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	res, err := s.createFlow(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return res.Flow, nil
}

// insertRun inserts one run of a template as CreateTasks would, unless a task holds key
// (then it returns that task and false). scheduledFor is the tick, or HeldRunAt for a
// held run. Callers hold s.mu.
func (s *Store) insertRun(tmpl *store.TaskTemplate, key string, scheduledFor, now time.Time, wake map[string]bool) (*store.Task, bool, error) {
	if e := s.idempotency[key]; e != nil {
		return cloneTask(&e.task), false, nil
	}
	p := store.CreateParams{Kind: tmpl.Kind, Queue: tmpl.Queue, Payload: bytes.Clone(tmpl.Payload),
		MaxAttempts: tmpl.MaxAttempts, ScheduledFor: scheduledFor, IdempotencyKey: key}
	if err := p.Normalize(); err != nil {
		return nil, false, err
	}
	e := &entry{task: store.Task{
		ID:             p.ID,
		Queue:          p.Queue,
		Kind:           p.Kind,
		Payload:        p.Payload,
		Status:         store.StatusPending,
		ScheduledFor:   dbTime(p.ScheduledFor),
		MaxAttempts:    p.MaxAttempts,
		IdempotencyKey: p.IdempotencyKey,
		CreatedAt:      now,
		UpdatedAt:      now,
	}}
	s.insert(e, now)
	if !e.task.ScheduledFor.After(now) {
		wake[p.Queue] = true
	}
	return cloneTask(&e.task), true, nil
}

// ClaimDueSchedules claims up to Limit due, enabled schedules (earliest next_run_at
// first) under the store mutex, enqueues their runs per catch-up policy and advances
// NextRunAt, as queries/schedule_claim.sql and rota.schedule_due_ticks do.
func (s *Store) ClaimDueSchedules(ctx context.Context, params store.ClaimSchedulesParams) ([]store.ScheduleClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	const op = "claim due schedules"
	if params.Limit < 1 || params.Limit > store.MaxListLimit {
		return nil, fmt.Errorf("%s: %w: limit must be between 1 and %d, got %d", op, store.ErrInvalid, store.MaxListLimit, params.Limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	var due []*schedule
	for _, row := range s.schedules {
		if row.sc.Enabled && !row.sc.NextRunAt.After(now) {
			due = append(due, row)
		}
	}
	slices.SortFunc(due, func(a, b *schedule) int {
		if c := a.sc.NextRunAt.Compare(b.sc.NextRunAt); c != 0 {
			return c
		}
		return cmp.Compare(a.sc.Name, b.sc.Name)
	})
	if len(due) > params.Limit {
		due = due[:params.Limit]
	}
	slices.SortFunc(due, func(a, b *schedule) int { return cmp.Compare(a.sc.Name, b.sc.Name) })

	// Plan and validate everything before writing anything (the claim is all or nothing,
	// like the PostgreSQL transaction).
	type plan struct {
		row      *schedule
		ticks    []time.Time
		heldFrom int // index of the first held run in ticks
		claim    store.ScheduleClaim
	}
	plans := make([]plan, len(due))
	for i, row := range due {
		ticks, skipped, next := row.dueTicks(now, store.MaxCatchUpRuns, store.CatchUpScanLimit)
		busy := row.sc.Overlap != store.OverlapAllow && s.liveRun(row.sc.CurrentRunID)
		if row.sc.Kind == store.ScheduleKindFlow {
			busy = row.sc.Overlap != store.OverlapAllow && s.liveFlowRun(row.sc.CurrentRunID)
		}
		waiting := row.sc.Overlap != store.OverlapAllow && s.runEntry(row.sc.WaitingRunID) != nil &&
			s.runEntry(row.sc.WaitingRunID).task.Status == store.StatusPending
		if row.sc.Kind == store.ScheduleKindFlow {
			waiting = row.sc.Overlap != store.OverlapAllow && s.liveFlowRun(row.sc.WaitingRunID)
		}
		runTicks, heldFrom := overlapTicks(ticks, row.sc.Overlap, busy, waiting)
		skipped += len(ticks) - len(runTicks)
		ticks = runTicks
		plans[i] = plan{row: row, ticks: ticks, heldFrom: heldFrom,
			claim: store.ScheduleClaim{Name: row.sc.Name, SkippedTicks: skipped, NextRunAt: next}}
		if len(ticks) > 0 && row.sc.Kind == store.ScheduleKindFlow {
			p := *store.CloneFlowParams(row.sc.Flow)
			if err := p.Normalize(); err != nil {
				return nil, fmt.Errorf("%s: schedule %q: %w", op, row.sc.Name, err)
			}
		} else if len(ticks) > 0 {
			p := store.CreateParams{Kind: row.sc.Task.Kind, Queue: row.sc.Task.Queue,
				Payload: row.sc.Task.Payload, MaxAttempts: row.sc.Task.MaxAttempts}
			if err := p.Normalize(); err != nil {
				return nil, fmt.Errorf("%s: schedule %q: %w", op, row.sc.Name, err)
			}
		}
	}
	claims := make([]store.ScheduleClaim, len(plans))
	wake := map[string]bool{}
	for i, p := range plans {
		sc := &p.row.sc
		previous := sc.CurrentRunID
		if sc.Kind == store.ScheduleKindFlow {
			p.claim.Flows = s.startScheduledFlows(sc, p.ticks, p.heldFrom)
			if sc.Overlap == store.OverlapCancelOther && previous != nil && *sc.CurrentRunID != *previous && s.liveFlowRun(previous) {
				// As the PostgreSQL adapter: the flow the new current run replaced is
				// canceled as CancelFlow does.
				s.stopFlow(s.flows[*previous], store.FlowCanceled, now)
			}
		}
		for j, tick := range p.ticks {
			if sc.Kind == store.ScheduleKindFlow {
				break // started above
			}
			at, held := tick, heldRun(j, p.heldFrom, len(p.claim.Runs))
			if held {
				at = store.HeldRunAt
			}
			task, inserted, err := s.insertRun(&sc.Task, store.ScheduleRunKey(sc.Name, tick), at, now, wake)
			if err != nil { // validated above
				panic(fmt.Sprintf("memory store: %s: %v", op, err))
			}
			if !inserted { // the tick's run existed: it changes nothing
				continue
			}
			id := task.ID
			if held {
				sc.WaitingRunID = &id
			} else {
				sc.CurrentRunID = &id
			}
			p.claim.Runs = append(p.claim.Runs, task)
		}
		if sc.Overlap == store.OverlapCancelOther && previous != nil && *sc.CurrentRunID != *previous && s.liveRun(previous) {
			// The trigger schedules_cancel_replaced: a new current run cancels the one it
			// replaced (after the replacement, so the canceled run is no longer current).
			s.cancel(s.runEntry(previous), now)
		}
		if p.claim.SkippedTicks > 0 {
			at := now
			sc.SkippedTicks += int64(p.claim.SkippedTicks)
			sc.LastSkippedAt = &at
		}
		sc.NextRunAt = p.claim.NextRunAt
		if n := len(p.ticks); n > 0 {
			last, at := p.ticks[n-1], now
			sc.LastRunAt, sc.LastEnqueuedAt = &last, &at
		}
		sc.UpdatedAt = now
		claims[i] = p.claim
	}
	s.notify(wake)
	return claims, nil
}

// startScheduledFlows starts one flow per tick of a kind flow schedule, keyed
// schedule:<name>:<unix of the tick>; a tick whose flow exists (its key is held) starts
// nothing. The newest flow started becomes the current run; the ticks from index
// heldFrom on get a held flow (buffer_one: created, not started), the waiting run.
// Callers hold s.mu.
func (s *Store) startScheduledFlows(sc *store.Schedule, ticks []time.Time, heldFrom int) []*store.Flow {
	var started []*store.Flow
	for i, tick := range ticks {
		p := *store.CloneFlowParams(sc.Flow)
		p.IdempotencyKey = store.ScheduleRunKey(sc.Name, tick)
		if err := p.Normalize(); err != nil { // validated before any write
			panic(fmt.Sprintf("memory store: claim schedule %q: %v", sc.Name, err))
		}
		held := heldRun(i, heldFrom, len(started))
		res, err := s.insertFlow(p, !held)
		if err != nil {
			panic(fmt.Sprintf("memory store: claim schedule %q: %v", sc.Name, err))
		}
		if res.Existing {
			continue
		}
		id := res.Flow.ID
		if held {
			sc.WaitingRunID = &id
		} else {
			sc.CurrentRunID = &id
		}
		started = append(started, res.Flow)
	}
	return started
}

// heldRun reports whether the run of a claim's i-th planned tick is held: from heldFrom
// on (buffer_one), unless no run of the claim came before it (the tick that was to run
// had its run or flow already, after a restore), since nothing would ever release it.
// As the PostgreSQL adapter does for both kinds.
func heldRun(i, heldFrom, runsBefore int) bool {
	return i >= heldFrom && !(heldFrom >= 1 && runsBefore == 0)
}

// overlapTicks is the overlap rule of queries/schedule_claim.sql (planned): which of the ticks
// catch-up chose get a run under the overlap policy, and the index of the first run
// that is held (len(run) when none is).
func overlapTicks(ticks []time.Time, overlap store.Overlap, busy, waiting bool) (run []time.Time, heldFrom int) {
	n := len(ticks)
	if n == 0 || overlap == store.OverlapAllow {
		return ticks, n
	}
	switch {
	case overlap == store.OverlapSkip && busy:
		return nil, 0
	case overlap == store.OverlapSkip:
		return ticks[:1], 1
	case overlap == store.OverlapCancelOther:
		return ticks[n-1:], 1
	case busy && waiting: // buffer_one
		return nil, 0
	case busy:
		return ticks[:1], 0
	default:
		return ticks[:min(n, 2)], 1
	}
}

// dueTicks is rota.schedule_due_ticks (migration 0004): the ticks one claim enqueues per
// catch-up policy, the ticks it skips, and the schedule's next NextRunAt.
func (sc *schedule) dueTicks(now time.Time, maxRuns, scanLimit int) (ticks []time.Time, skipped int, next time.Time) {
	first := sc.sc.NextRunAt
	if first.After(now) {
		return nil, 0, first
	}
	t := first
	if sc.sc.CatchUp == store.CatchUpAll {
		for {
			ticks = append(ticks, t)
			t = sc.next(t)
			if t.After(now) || len(ticks) >= maxRuns {
				return ticks, 0, t
			}
		}
	}

	n, far := 1, false // due ticks counted, t being the last of them
	var nx time.Time
	for {
		nx = sc.next(t)
		if nx.After(now) {
			break
		}
		t = nx
		n++
		if n >= scanLimit {
			far = true
			break
		}
	}
	if far {
		// Bisection for the latest tick <= now. Invariant: t <= now is a due tick and no
		// tick lies in (hi, now]. It ends with nx = the first tick after t (and after now).
		hi := now
		for {
			nx = sc.next(t)
			if nx.After(hi) {
				break
			}
			t = nx
			mid := dbTime(t.Add(hi.Sub(t) / 2))
			if m := sc.next(mid); !m.After(hi) {
				t = m
			} else {
				hi = mid
			}
		}
	}
	next = nx
	switch {
	case sc.sc.CatchUp == store.CatchUpOne:
		return []time.Time{t}, n - 1, next
	case n == 1:
		return []time.Time{first}, 0, next
	default:
		return nil, n, next
	}
}

// ListScheduleRuns pages through the tasks a schedule created (claims and triggers),
// newest first. ErrNotFound when no schedule has the name and no task names it.
func (s *Store) ListScheduleRuns(ctx context.Context, params store.ScheduleRunsParams) ([]*store.Task, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	op := fmt.Sprintf("list runs of schedule %q", params.Name)
	if err := store.ValidateScheduleName(params.Name); err != nil {
		return nil, "", fmt.Errorf("%s: %w", op, err)
	}
	limit, err := store.NormalizeLimit(params.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	end := len(s.ids)
	if params.Cursor != "" {
		cursor, err := store.DecodeTaskCursor(params.Cursor)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", op, err)
		}
		end, _ = slices.BinarySearchFunc(s.ids, cursor, compareIDs)
	}
	var out []*store.Task
	for i := end - 1; i >= 0; i-- {
		t := &s.tasks[s.ids[i]].task
		if !isRunOf(t.IdempotencyKey, params.Name) {
			continue
		}
		if len(out) == limit {
			return out, store.EncodeTaskCursor(out[limit-1].ID), nil
		}
		out = append(out, cloneTask(t))
	}
	if len(out) == 0 && params.Cursor == "" && s.schedules[params.Name] == nil {
		return nil, "", fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return out, "", nil
}

// isRunOf mirrors the index tasks_schedule_runs: a "schedule:" key whose second
// ':'-separated part is the name.
func isRunOf(key, name string) bool {
	rest, ok := strings.CutPrefix(key, "schedule:")
	if !ok {
		return false
	}
	part, _, _ := strings.Cut(rest, ":")
	return part == name
}
