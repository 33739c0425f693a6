// Package memory is the in-memory store.Store: the embedded default of `rota dev` and a
// fast store for tests. It mirrors the PostgreSQL adapter's semantics, including what the
// schema's triggers do there (the state machine, a dead-letter event on every transition
// to DEAD or FAILED, a REPLAYED event on every replay) and the idempotency-key index.
//
// One mutex guards everything. Claims stay cheap however large the backlog: each queue
// and claimable status has a heap of due tasks per group (priority desc, scheduled_for,
// id) under a heap of the groups' turns (fair.go), fed by a heap of not-yet-due ones, all
// with lazy removal; queue settings are applied in limits.go; expired leases come off a heap ordered
// by expiry. EnqueueDue (SQS mode) reads indexes of its own, in enqueue.go. Every value
// returned is a deep copy.
package memory

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

var _ store.Store = (*Store)(nil)

// Store is the in-memory task store. The zero value is not usable; call New.
type Store struct {
	now func() time.Time // the store's clock, like PostgreSQL's now()
	rnd func() float64   // backoff jitter

	mu          sync.Mutex
	tasks       map[uuid.UUID]*entry
	ids         []uuid.UUID       // every task id, ascending (ListTasks pages over it)
	idempotency map[string]*entry // key -> the task holding it (not DEAD, FAILED, CANCELED)
	claimable   map[queueStatus]*claimQueue
	leases      minHeap[leaseItem]   // PROCESSING tasks by lease expiry (lazy)
	processing  map[uuid.UUID]*entry // PROCESSING tasks
	counts      map[string]map[store.Status]int64
	deadLetters []*store.DeadLetter // id = index + 1
	attemptID   int64
	subs        map[int]chan string             // WaitForTasks subscribers
	listeners   map[int]chan store.Notification // Listen subscribers
	nextSub     int
	closed      bool
	schedules   map[string]*schedule            // by name; see schedules.go
	enq         enqueueIndex                    // what EnqueueDue reads; see enqueue.go
	outbox      dlqOutbox                       // what PublishDeadLetters reads; see outbox.go
	served      map[string]map[string]time.Time // queue -> enqueuer -> served until; queuemode.go
	workers     map[string]*store.Worker        // by id; workers.go
	queues      map[string]*store.QueueSettings // configured queues; queues.go
	// groupRunning counts each group's PROCESSING tasks, claimLogs the recent claims of
	// rate-limited queues: what limits.go reads.
	groupRunning map[queueGroup]int
	claimLogs    map[string]*claimLog

	flows        map[uuid.UUID]*flowEntry // flows.go
	flowIDs      []uuid.UUID              // every flow id, ascending (ListFlows pages over it)
	flowKeys     map[string]*flowEntry    // idempotency key -> the flow holding it (not FAILED, CANCELED)
	flowStopping bool                     // a flow is being stopped: its tasks' ends do not feed back
}

// entry is one task and everything hanging off it.
type entry struct {
	task        store.Task
	attempts    []store.Attempt
	deadLetters []int // indexes into Store.deadLetters
	// seq changes whenever the task enters or leaves a claimable status or its place
	// in the claim order changes; heap items carrying an older seq are stale.
	seq uint64
}

// New returns an empty store.
func New() *Store {
	return &Store{
		now:          func() time.Time { return time.Now() },
		rnd:          rand.Float64,
		tasks:        map[uuid.UUID]*entry{},
		idempotency:  map[string]*entry{},
		claimable:    map[queueStatus]*claimQueue{},
		leases:       minHeap[leaseItem]{less: leaseLess},
		processing:   map[uuid.UUID]*entry{},
		counts:       map[string]map[store.Status]int64{},
		subs:         map[int]chan string{},
		listeners:    map[int]chan store.Notification{},
		schedules:    map[string]*schedule{},
		groupRunning: map[queueGroup]int{},
		flows:        map[uuid.UUID]*flowEntry{},
		flowKeys:     map[string]*flowEntry{},
	}
}

// clock returns now at the precision PostgreSQL keeps (microseconds), in UTC.
func (s *Store) clock() time.Time { return dbTime(s.now()) }

func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Close wakes and closes every WaitForTasks and Listen channel. The store keeps its data and still
// answers calls (there is nothing to release).
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for id, ch := range s.subs {
		delete(s.subs, id)
		close(ch)
	}
	for id, ch := range s.listeners {
		delete(s.listeners, id)
		close(ch)
	}
}

// --- the state machine --------------------------------------------------------------

// legal mirrors rota.tasks_check_transition.
func legal(from, to store.Status) bool {
	switch from {
	case store.StatusPending:
		return to == store.StatusEnqueued || to == store.StatusProcessing || to == store.StatusCanceled
	case store.StatusEnqueued:
		return to == store.StatusProcessing || to == store.StatusPending || to == store.StatusCanceled
	case store.StatusProcessing:
		return to == store.StatusSucceeded || to == store.StatusPending ||
			to == store.StatusDead || to == store.StatusFailed || to == store.StatusCanceled
	case store.StatusDead, store.StatusFailed, store.StatusCanceled:
		return to == store.StatusPending
	}
	return false
}

func releasesKey(s store.Status) bool {
	return s == store.StatusDead || s == store.StatusFailed || s == store.StatusCanceled
}

func claimableStatus(s store.Status) bool {
	return s == store.StatusPending || s == store.StatusEnqueued
}

// transition moves e to status to: mutate sets the row's other columns, then the
// bookkeeping the PostgreSQL triggers and indexes do happens here (dead letters, replay
// events, the idempotency index, the claim and lease indexes, the status counts).
// Callers check preconditions first; an illegal transition is a bug in this package.
func (s *Store) transition(e *entry, to store.Status, now time.Time, mutate func(t *store.Task)) {
	old := e.task
	if !legal(old.Status, to) {
		panic(fmt.Sprintf("memory store: illegal transition %s -> %s (task %s)", old.Status, to, old.ID))
	}
	if mutate != nil {
		mutate(&e.task)
	}
	t := &e.task
	t.Status = to
	t.UpdatedAt = now
	if to != store.StatusProcessing {
		t.LeaseToken = uuid.Nil
		t.LeaseExpiresAt = nil
	}
	if to == store.StatusProcessing && (t.AttemptCount != old.AttemptCount+1 || old.ScheduledFor.After(now)) {
		panic(fmt.Sprintf("memory store: bad claim of task %s", t.ID))
	}

	s.counts[t.Queue][old.Status]--
	s.counts[t.Queue][to]++
	if claimableStatus(old.Status) {
		s.claimQueue(t.Queue, old.Status).live--
	}
	if old.Status == store.StatusProcessing {
		delete(s.processing, t.ID)
	}
	s.countGroupRunning(t, old.Status, to)
	e.seq++

	switch {
	case claimableStatus(to):
		s.addClaimable(e, now)
		if to == store.StatusEnqueued {
			s.indexEnqueued(e, now)
		}
	case to == store.StatusProcessing:
		s.processing[t.ID] = e
		s.addLease(e)
	}

	if t.IdempotencyKey != "" {
		if releasesKey(to) && s.idempotency[t.IdempotencyKey] == e {
			delete(s.idempotency, t.IdempotencyKey)
		} else if releasesKey(old.Status) && !releasesKey(to) {
			s.idempotency[t.IdempotencyKey] = e
		}
	}

	if claimableStatus(old.Status) || old.Status == store.StatusProcessing {
		if to.Terminal() {
			s.scheduleRunEnded(t, now) // rota.schedule_run_ended (migration 0017)
		}
	}

	// rota.tasks_record_transition.
	switch {
	case to == store.StatusDead || to == store.StatusFailed:
		s.deadLetters = append(s.deadLetters, &store.DeadLetter{
			ID:           int64(len(s.deadLetters) + 1),
			TaskID:       t.ID,
			Kind:         t.Kind,
			Queue:        t.Queue,
			WorkerID:     t.WorkerID,
			AttemptCount: t.AttemptCount,
			MaxAttempts:  t.MaxAttempts,
			Error:        t.LastError,
			Reason:       to,
			CreatedAt:    now,
		})
		e.deadLetters = append(e.deadLetters, len(s.deadLetters)-1)
		if t.EnqueuedAt != nil { // an SQS-mode task: the event awaits the DLQ
			s.outbox.add(int64(len(s.deadLetters)))
		}
	case to == store.StatusPending && old.Status.Terminal():
		s.attemptID++
		finished := now
		e.attempts = append(e.attempts, store.Attempt{
			ID:         s.attemptID,
			TaskID:     t.ID,
			Attempt:    old.AttemptCount,
			StartedAt:  now,
			FinishedAt: &finished,
			Outcome:    store.OutcomeReplayed,
			Error:      "replayed from " + string(old.Status),
		})
		for _, i := range e.deadLetters {
			if s.deadLetters[i].ReplayedAt == nil {
				at := now
				s.deadLetters[i].ReplayedAt = &at
			}
		}
	}

	// rota.tasks_flow_advance: a step task ended.
	if t.FlowID != uuid.Nil && to.Terminal() {
		s.flowTaskEnded(e, now)
	}
}

// --- copies -------------------------------------------------------------------------

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

func cloneTask(t *store.Task) *store.Task {
	c := *t
	c.Payload = bytes.Clone(t.Payload)
	c.Output = bytes.Clone(t.Output)
	c.Inputs = bytes.Clone(t.Inputs)
	c.Item = bytes.Clone(t.Item)
	if t.Index != nil {
		i := *t.Index
		c.Index = &i
	}
	c.LeaseExpiresAt = cloneTime(t.LeaseExpiresAt)
	c.CancelRequestedAt = cloneTime(t.CancelRequestedAt)
	c.EnqueuedAt = cloneTime(t.EnqueuedAt)
	c.ProcessingStartedAt = cloneTime(t.ProcessingStartedAt)
	c.CompletedAt = cloneTime(t.CompletedAt)
	return &c
}

func cloneAttempt(a store.Attempt) store.Attempt {
	a.FinishedAt = cloneTime(a.FinishedAt)
	return a
}

func cloneDeadLetter(d *store.DeadLetter) store.DeadLetter {
	c := *d
	c.ReplayedAt = cloneTime(d.ReplayedAt)
	return c
}

// --- creating and reading -----------------------------------------------------------

// CreateTasks inserts tasks, all or nothing; see store.Store.
func (s *Store) CreateTasks(ctx context.Context, params []store.CreateParams) ([]store.CreateResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(params) == 0 {
		return nil, nil
	}
	norm := make([]store.CreateParams, len(params))
	for i, p := range params {
		p.Payload = bytes.Clone(p.Payload)
		if err := p.Normalize(); err != nil {
			return nil, fmt.Errorf("create task %d: %w", i, err)
		}
		norm[i] = p
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()

	// Decide everything before writing anything: each param names an existing task, a
	// task earlier in this batch (a repeated key), or a new task.
	const isNew = -1
	existing := make([]*entry, len(norm))
	sameAs := make([]int, len(norm))
	inBatch := map[string]int{}    // idempotency key -> index of the batch's new task
	newIDs := map[uuid.UUID]bool{} // ids this batch inserts
	for i, p := range norm {
		sameAs[i] = isNew
		if p.IdempotencyKey != "" {
			if e := s.idempotency[p.IdempotencyKey]; e != nil {
				existing[i] = e
				continue
			}
			if j, ok := inBatch[p.IdempotencyKey]; ok {
				sameAs[i] = j
				continue
			}
			inBatch[p.IdempotencyKey] = i
		}
		if _, dup := s.tasks[p.ID]; dup || newIDs[p.ID] {
			return nil, fmt.Errorf("create task %d: %w: a task with id %s exists", i, store.ErrConflict, p.ID)
		}
		newIDs[p.ID] = true
	}

	results := make([]store.CreateResult, len(norm))
	wake := map[string]bool{}
	for i, p := range norm {
		switch {
		case existing[i] != nil:
			results[i] = store.CreateResult{Task: cloneTask(&existing[i].task), Existing: true}
		case sameAs[i] != isNew:
			results[i] = store.CreateResult{Task: cloneTask(results[sameAs[i]].Task), Existing: true}
		default:
			scheduled := dbTime(now.Add(p.Delay)) // the store's clock, as now() in SQL
			if !p.ScheduledFor.IsZero() {
				scheduled = dbTime(p.ScheduledFor)
			}
			e := &entry{task: store.Task{
				ID:             p.ID,
				Queue:          p.Queue,
				Kind:           p.Kind,
				Payload:        p.Payload,
				Status:         store.StatusPending,
				Priority:       p.Priority,
				ScheduledFor:   scheduled,
				MaxAttempts:    p.MaxAttempts,
				IdempotencyKey: p.IdempotencyKey,
				TimeoutSeconds: p.TimeoutSeconds,
				GroupKey:       p.GroupKey,
				TraceContext:   maps.Clone(p.TraceContext),
				CreatedAt:      now,
				UpdatedAt:      now,
			}}
			s.insert(e, now)
			results[i] = store.CreateResult{Task: cloneTask(&e.task)}
			if !scheduled.After(now) {
				wake[p.Queue] = true
			}
		}
	}
	s.notify(wake)
	return results, nil
}

// insert adds a new PENDING task to every index.
func (s *Store) insert(e *entry, now time.Time) {
	t := &e.task
	s.tasks[t.ID] = e
	if n := len(s.ids); n == 0 || compareIDs(s.ids[n-1], t.ID) < 0 {
		s.ids = append(s.ids, t.ID) // the usual case: v7 ids grow
	} else {
		i, _ := slices.BinarySearchFunc(s.ids, t.ID, compareIDs)
		s.ids = slices.Insert(s.ids, i, t.ID)
	}
	if t.IdempotencyKey != "" {
		s.idempotency[t.IdempotencyKey] = e
	}
	if s.counts[t.Queue] == nil {
		s.counts[t.Queue] = map[store.Status]int64{}
	}
	s.counts[t.Queue][t.Status]++
	s.addClaimable(e, now)
}

func compareIDs(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }

// GetTask returns one task; see store.Store.
func (s *Store) GetTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[id]
	if e == nil {
		return nil, fmt.Errorf("get task %s: %w", id, store.ErrNotFound)
	}
	t := cloneTask(&e.task)
	t.ReadAt = s.clock()
	return t, nil
}

// ListTasks pages through tasks newest first; see store.Store.
func (s *Store) ListTasks(ctx context.Context, p store.ListParams) ([]*store.Task, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	limit, maxBytes, err := p.Check()
	if err != nil {
		return nil, "", fmt.Errorf("list tasks: %w", err)
	}
	var statuses map[store.Status]bool
	if len(p.Statuses) > 0 {
		statuses = map[store.Status]bool{}
		for _, st := range p.Statuses {
			statuses[st] = true
		}
	}
	var cursor uuid.UUID
	if p.Cursor != "" {
		if cursor, err = store.DecodeTaskCursor(p.Cursor); err != nil {
			return nil, "", fmt.Errorf("list tasks: %w", err)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	end := len(s.ids)
	if p.Cursor != "" {
		end, _ = slices.BinarySearchFunc(s.ids, cursor, compareIDs) // ids strictly below the cursor
	}
	var out []*store.Task
	bytes := 0
	for i := end - 1; i >= 0; i-- {
		t := &s.tasks[s.ids[i]].task
		if (statuses != nil && !statuses[t.Status]) || (p.Queue != "" && t.Queue != p.Queue) || (p.Kind != "" && t.Kind != p.Kind) {
			continue
		}
		if store.PageFull(len(out), bytes, limit, maxBytes) { // and t follows
			return out, store.EncodeTaskCursor(out[len(out)-1].ID), nil
		}
		out = append(out, cloneTask(t))
		bytes += len(t.Payload) + len(t.Output)
	}
	return out, "", nil
}

// ListAttempts returns a task's attempt history, oldest first. ErrNotFound for an
// unknown task.
func (s *Store) ListAttempts(ctx context.Context, taskID uuid.UUID) ([]store.Attempt, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tasks[taskID]
	if e == nil {
		return nil, fmt.Errorf("list attempts of %s: %w", taskID, store.ErrNotFound)
	}
	out := make([]store.Attempt, len(e.attempts))
	for i, a := range e.attempts {
		out[i] = cloneAttempt(a)
	}
	return out, nil
}

// ListDeadLetters pages through dead-letter events newest first; see store.Store.
func (s *Store) ListDeadLetters(ctx context.Context, p store.DeadLetterParams) ([]store.DeadLetter, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	limit, err := store.NormalizeLimit(p.Limit)
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return nil, "", fmt.Errorf("list dead letters: %w", err)
	}
	var before int64 = -1
	if p.Cursor != "" {
		if before, err = store.DecodeDeadLetterCursor(p.Cursor); err != nil {
			return nil, "", fmt.Errorf("list dead letters: %w", err)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	start := len(s.deadLetters) - 1
	if before > 0 {
		start = min(start, int(before)-2) // the event with id before-1 is at index before-2
	}
	var out []store.DeadLetter
	for i := start; i >= 0; i-- {
		d := s.deadLetters[i]
		if d == nil { // deleted with its task
			continue
		}
		if (p.Queue != "" && d.Queue != p.Queue) || (p.Kind != "" && d.Kind != p.Kind) || (p.Reason != "" && d.Reason != p.Reason) {
			continue
		}
		if len(out) == limit {
			return out, store.EncodeDeadLetterCursor(out[limit-1].ID), nil
		}
		out = append(out, cloneDeadLetter(d))
	}
	return out, "", nil
}

// Stats counts tasks per queue and status; see store.Store.
func (s *Store) Stats(ctx context.Context) ([]store.QueueStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	byQueue := map[string]*store.QueueStats{}
	var out []store.QueueStats
	queues := make([]string, 0, len(s.counts))
	for q := range s.counts {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	for _, q := range queues {
		st := store.QueueStats{Queue: q, Counts: make(map[store.Status]int64, len(store.AllStatuses))}
		for _, status := range store.AllStatuses {
			st.Counts[status] = s.counts[q][status] // every status, zero or not
		}
		if cq := s.claimable[queueStatus{q, store.StatusPending}]; cq != nil {
			st.OldestDueAt = cloneTime(cq.oldestDue(now))
		}
		out = append(out, st)
	}
	for i := range out {
		byQueue[out[i].Queue] = &out[i]
	}
	for _, e := range s.processing {
		if e.task.LeaseExpiresAt.Before(now) {
			byQueue[e.task.Queue].ExpiredLeases++
		}
	}
	return out, nil
}
