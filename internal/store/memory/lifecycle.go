package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// ClaimTasks moves up to Limit due tasks to PROCESSING; see store.Store.
func (s *Store) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	p.Report.Reset()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.Queue == "" {
		p.Queue = store.DefaultQueue
	}
	if p.Limit == 0 && len(p.TaskIDs) > 0 {
		p.Limit = len(p.TaskIDs)
	}
	if err := validateClaim(p); err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if p.TaskIDs != nil {
		// A task an EnqueueDue call is sending is "locked": wait for the mark, as the
		// PostgreSQL claim by id waits for the enqueuer's row lock.
		if err := s.waitWhileSending(ctx, p.TaskIDs); err != nil {
			return nil, fmt.Errorf("claim tasks: %w", err)
		}
	}
	now := s.clock()
	var b *claimBudget // nil: the queue has no limits (rules 1-7 of flow control)
	if set := s.limitsOf(p.Queue); set != nil {
		b = s.budget(set, p.Limit, now)
		b.report = p.Report
		defer b.done()
	}
	var picked []*entry
	if p.TaskIDs != nil { // a restriction, even to nothing
		seen := map[uuid.UUID]bool{}
		var items []claimItem
		for _, id := range p.TaskIDs {
			e := s.tasks[id]
			if e == nil || seen[id] {
				continue
			}
			seen[id] = true
			t := &e.task
			if t.Queue == p.Queue && claimableByID(t.Status, p.From) && !t.ScheduledFor.After(now) && t.AttemptCount < t.MaxAttempts {
				items = append(items, claimItem{e: e, priority: t.Priority, at: t.ScheduledFor, id: t.ID})
			}
		}
		slices.SortFunc(items, func(a, b claimItem) int {
			if claimOrder(a, b) {
				return -1
			}
			return 1
		})
		left := false // a due task asked for was left
		for _, it := range items {
			if len(picked) == p.Limit {
				break
			}
			if b != nil {
				if !b.admits(it.e.task.GroupKey) {
					left = true
					continue
				}
				b.took(it.e.task.GroupKey)
			}
			picked = append(picked, it.e)
		}
		if b != nil {
			b.explain(len(picked), left || len(picked) < min(len(items), p.Limit))
		}
	} else if cq := s.claimable[queueStatus{p.Queue, p.From}]; cq != nil && b != nil {
		picked = s.claimLimited(cq, b)
		_, _, more := cq.front(now)
		b.explain(len(picked), more)
	} else if cq != nil {
		for len(picked) < p.Limit {
			e := cq.next(now)
			if e == nil {
				break
			}
			picked = append(picked, e)
		}
	}

	out := make([]*store.Task, 0, len(picked))
	expires := now.Add(p.LeaseDuration)
	for _, e := range picked {
		token := uuid.New()
		s.transition(e, store.StatusProcessing, now, func(t *store.Task) {
			t.AttemptCount++
			t.WorkerID = p.WorkerID
			t.LeaseToken = token
			t.LeaseExpiresAt = &expires
			started := now
			t.ProcessingStartedAt = &started
			t.CancelRequestedAt = nil
			if p.From == store.StatusEnqueued && t.EnqueuedAt == nil {
				// As claim_tasks.sql and claim_tasks_by_id.sql: claimed from ENQUEUED, an
				// SQS-mode task.
				sentAt := now
				t.EnqueuedAt = &sentAt
			}
		})
		// The running attempt gets its id when it ends, as in PostgreSQL, where its row is
		// written then.
		e.attempts = append(e.attempts, store.Attempt{
			TaskID:     e.task.ID,
			Attempt:    e.task.AttemptCount,
			WorkerID:   p.WorkerID,
			LeaseToken: token,
			StartedAt:  now,
		})
		out = append(out, cloneTask(&e.task))
	}
	return out, nil
}

func validateClaim(p store.ClaimParams) error {
	if p.From != store.StatusPending && p.From != store.StatusEnqueued {
		return fmt.Errorf("%w: claims take PENDING or ENQUEUED tasks, not %q", store.ErrInvalid, p.From)
	}
	if p.WorkerID == "" {
		return fmt.Errorf("%w: worker id is required", store.ErrInvalid)
	}
	if p.Limit < 1 {
		return fmt.Errorf("%w: limit must be at least 1, got %d", store.ErrInvalid, p.Limit)
	}
	if p.LeaseDuration <= 0 {
		return fmt.Errorf("%w: lease duration must be positive, got %s", store.ErrInvalid, p.LeaseDuration)
	}
	return nil
}

// Heartbeat extends a lease; see store.Store.
func (s *Store) Heartbeat(ctx context.Context, p store.HeartbeatParams) (*store.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.LeaseDuration <= 0 {
		return nil, fmt.Errorf("heartbeat %s: %w: lease duration must be positive, got %s", p.TaskID, store.ErrInvalid, p.LeaseDuration)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[p.TaskID]
	if e == nil {
		return nil, fmt.Errorf("heartbeat %s: %w", p.TaskID, store.ErrNotFound)
	}
	if !s.holds(e, p.LeaseToken) {
		return nil, fmt.Errorf("heartbeat %s: %w", p.TaskID, store.ErrLeaseLost)
	}
	now := s.clock()
	expires := now.Add(p.LeaseDuration)
	e.task.LeaseExpiresAt = &expires
	e.task.UpdatedAt = now
	s.addLease(e)
	return cloneTask(&e.task), nil
}

// HeartbeatMany extends many leases; see store.Store.
func (s *Store) HeartbeatMany(ctx context.Context, p store.HeartbeatManyParams) ([]store.HeartbeatResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.LeaseDuration <= 0 {
		return nil, fmt.Errorf("heartbeat: %w: lease duration must be positive, got %s", store.ErrInvalid, p.LeaseDuration)
	}
	return store.HeartbeatEach(ctx, p, s.Heartbeat)
}

// holds reports whether token is the current lease of e.
func (s *Store) holds(e *entry, token uuid.UUID) bool {
	return e.task.Status == store.StatusProcessing && token != uuid.Nil && e.task.LeaseToken == token
}

// RecordOutcomes writes finished attempts, each fenced by its lease token; see
// store.Store. Invalid outcomes fail the whole call with ErrInvalid and write nothing,
// except an invalid output, which fails its own outcome only (as in PostgreSQL).
func (s *Store) RecordOutcomes(ctx context.Context, outcomes []store.Outcome) ([]store.OutcomeResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, o := range outcomes {
		switch o.Kind {
		case store.Succeed, store.Retry, store.Release, store.Fail, store.Cancel:
		default:
			return nil, fmt.Errorf("record outcome %d: %w: unknown outcome kind %q", i, store.ErrInvalid, o.Kind)
		}
		if o.RetryIn < 0 {
			return nil, fmt.Errorf("record outcome %d: %w: retry delay must not be negative, got %s", i, store.ErrInvalid, o.RetryIn)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	results := make([]store.OutcomeResult, len(outcomes))
	wake := map[string]bool{}
	for i, o := range outcomes {
		results[i] = store.OutcomeResult{TaskID: o.TaskID}
		if o.Kind == store.Succeed {
			output, err := store.CheckOutput(o.Output)
			if err != nil {
				results[i].Err = fmt.Errorf("record outcome for %s: %w", o.TaskID, err)
				continue
			}
			o.Output = bytes.Clone(output)
		} else {
			o.Output = nil // only a success has an output
		}
		e := s.tasks[o.TaskID]
		if e == nil || !s.holds(e, o.LeaseToken) {
			// An unknown task holds no lease either (as in PostgreSQL, where the fenced
			// update finds no row either way).
			results[i].Err = fmt.Errorf("record outcome for %s: %w", o.TaskID, store.ErrLeaseLost)
			continue
		}
		results[i].Status = s.finish(e, o, now)
		if results[i].Status == store.StatusPending && !e.task.ScheduledFor.After(now) {
			wake[e.task.Queue] = true
		}
	}
	s.notify(wake)
	return results, nil
}

// finish applies one fenced outcome to a PROCESSING task and returns its new status.
func (s *Store) finish(e *entry, o store.Outcome, now time.Time) store.Status {
	msg := store.TruncateError(o.Error)
	var to store.Status
	var result store.AttemptOutcome
	kind := o.Kind
	if e.task.CancelRequestedAt != nil && (kind == store.Retry || kind == store.Release || kind == store.Fail) {
		kind = store.Cancel
	}
	switch kind {
	case store.Succeed:
		to, result = store.StatusSucceeded, store.OutcomeSucceeded
	case store.Cancel:
		to, result = store.StatusCanceled, store.OutcomeCanceled
	case store.Fail:
		to, result = store.StatusFailed, store.OutcomeFailed
	case store.Retry, store.Release:
		if kind == store.Retry && e.task.AttemptCount >= e.task.MaxAttempts {
			to, result = store.StatusDead, store.OutcomeDead
		} else {
			to, result = store.StatusPending, store.OutcomeRetried
		}
	}
	s.closeAttempt(e, result, msg, now)
	s.transition(e, to, now, func(t *store.Task) {
		if msg != "" {
			t.LastError = msg
		}
		if kind == store.Release {
			t.MaxAttempts++ // the attempt does not count
		}
		t.Output = o.Output // nil unless it succeeded
		if to.Terminal() {
			done := now
			t.CompletedAt = &done
		} else {
			t.ScheduledFor = dbTime(now.Add(o.RetryIn)) // the store's clock, as now() in SQL
			t.EnqueuedAt = nil                          // no message: the enqueuer of its queue sends one once due
		}
	})
	return to
}

// closeAttempt finishes the open attempt row of e's current lease.
func (s *Store) closeAttempt(e *entry, outcome store.AttemptOutcome, msg string, now time.Time) {
	for i := len(e.attempts) - 1; i >= 0; i-- {
		a := &e.attempts[i]
		if a.LeaseToken == e.task.LeaseToken && a.FinishedAt == nil {
			s.attemptID++
			a.ID = s.attemptID
			finished := now
			a.FinishedAt = &finished
			a.Outcome = outcome
			a.Error = msg
			return
		}
	}
}

// CancelTask cancels a task or asks its worker to; see store.Store.
func (s *Store) CancelTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[id]
	if e == nil {
		return nil, fmt.Errorf("cancel task %s: %w", id, store.ErrNotFound)
	}
	now := s.clock()
	switch e.task.Status {
	case store.StatusPending, store.StatusEnqueued, store.StatusProcessing:
		s.cancel(e, now)
	case store.StatusCanceled:
		// Already done: report it unchanged.
	default:
		return nil, fmt.Errorf("cancel task %s: %w: the task is %s", id, store.ErrIllegalTransition, e.task.Status)
	}
	return cloneTask(&e.task), nil
}

// cancel cancels a live task: PENDING or ENQUEUED at once, PROCESSING by a cancel
// request its worker is told about (as cancel_task.sql notifies rota_cancel: every
// request, the first or not).
func (s *Store) cancel(e *entry, now time.Time) {
	if e.task.Status != store.StatusProcessing {
		s.transition(e, store.StatusCanceled, now, func(t *store.Task) {
			done := now
			t.CompletedAt = &done
		})
		return
	}
	if e.task.CancelRequestedAt == nil {
		at := now
		e.task.CancelRequestedAt = &at
		e.task.UpdatedAt = now
	}
	s.broadcast(store.Notification{Kind: store.CancelRequested, TaskID: e.task.ID})
}

// ReplayTask moves a DEAD, FAILED or CANCELED task back to PENDING; see store.Store.
func (s *Store) ReplayTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[id]
	if e == nil {
		return nil, fmt.Errorf("replay task %s: %w", id, store.ErrNotFound)
	}
	switch e.task.Status {
	case store.StatusDead, store.StatusFailed, store.StatusCanceled:
	default:
		return nil, fmt.Errorf("replay task %s: %w: the task is %s", id, store.ErrIllegalTransition, e.task.Status)
	}
	if key := e.task.IdempotencyKey; key != "" {
		if holder := s.idempotency[key]; holder != nil && holder != e {
			return nil, fmt.Errorf("replay task %s: %w: task %s now holds idempotency key %q", id, store.ErrConflict, holder.task.ID, key)
		}
	}
	s.replay(e, s.clock())
	return cloneTask(&e.task), nil
}

// replay moves a DEAD, FAILED or CANCELED task back to PENDING; the caller has checked
// that its idempotency key is free.
func (s *Store) replay(e *entry, now time.Time) {
	s.transition(e, store.StatusPending, now, func(t *store.Task) {
		t.AttemptCount = 0
		t.ScheduledFor = now
		t.LastError = ""
		t.CompletedAt = nil
		t.CancelRequestedAt = nil
	})
	s.notify(map[string]bool{e.task.Queue: true})
}

// ReapExpiredLeases handles PROCESSING tasks whose lease expired; see store.Store.
func (s *Store) ReapExpiredLeases(ctx context.Context, p store.ReapParams) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	switch {
	case p.Limit < 1:
		return 0, fmt.Errorf("reap: %w: limit must be at least 1, got %d", store.ErrInvalid, p.Limit)
	case p.BackoffBase < 0 || p.BackoffMax < 0:
		return 0, fmt.Errorf("reap: %w: negative backoff", store.ErrInvalid)
	case p.ExpiredWithin < 0:
		return 0, fmt.Errorf("reap: %w: negative expired-within", store.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	wake := map[string]bool{}
	n := 0
	skip := make(map[uuid.UUID]bool, len(p.HeldTaskIDs))
	for _, id := range p.HeldTaskIDs {
		skip[id] = true
	}
	var held []leaseItem // expired leases of held tasks: back in the heap afterwards
	defer func() {
		for _, it := range held {
			s.leases.Push(it)
		}
	}()
	for n < p.Limit {
		it, ok := s.nextExpired(now)
		if !ok {
			break
		}
		e := it.e
		if skip[e.task.ID] || (p.ExpiredWithin > 0 && it.expires.Before(now.Add(-p.ExpiredWithin))) {
			held = append(held, it)
			continue
		}
		n++
		t := &e.task
		msg := "lease expired (worker " + t.WorkerID + ")"
		s.closeAttempt(e, store.OutcomeLeaseExpired, msg, now)
		to := store.StatusPending
		switch {
		case t.CancelRequestedAt != nil:
			to = store.StatusCanceled
		case t.AttemptCount >= t.MaxAttempts:
			to = store.StatusDead
		}
		delay := store.Backoff(t.AttemptCount, p.BackoffBase, p.BackoffMax, s.rnd)
		s.transition(e, to, now, func(t *store.Task) {
			t.LastError = msg
			if to.Terminal() {
				done := now
				t.CompletedAt = &done
			} else {
				t.ScheduledFor = dbTime(now.Add(delay))
				t.EnqueuedAt = nil // no message: the enqueuer of its queue sends one once due
			}
		})
		if to == store.StatusPending && delay == 0 {
			wake[t.Queue] = true
		}
	}
	s.notify(wake)
	return n, nil
}

// claimableByID mirrors claim_tasks_by_id.sql: a claim by id from ENQUEUED also takes a
// due PENDING task, whose message (sent before a retry or a reaped lease brought it back
// to PENDING) still names it.
func claimableByID(status, from store.Status) bool {
	return status == from || (from == store.StatusEnqueued && status == store.StatusPending)
}

// NextDue reports how long until each queue's earliest PENDING task is due; see
// store.Store.
func (s *Store) NextDue(ctx context.Context, queues []string) (map[string]time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	out := make(map[string]time.Duration, len(queues))
	for _, q := range queues {
		cq := s.claimable[queueStatus{q, store.StatusPending}]
		if cq == nil {
			continue
		}
		if d, ok := cq.nextDue(now); ok {
			out[q] = d
		}
	}
	return out, nil
}
