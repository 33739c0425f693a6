package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

// CreateTasks inserts tasks, all or nothing: a batch without idempotency keys or delays
// by one COPY in a transaction of its own (createcopy.go), any other in one statement
// (atomic by itself; see queries/create_tasks.sql for how idempotency keys resolve).
func (s *Store) CreateTasks(ctx context.Context, params []store.CreateParams) ([]store.CreateResult, error) {
	results, err := createTasks(ctx, s.pool, s.inNewTx, params, true)
	if err == nil {
		s.notifyCreated(results)
	}
	return results, err
}

// inNewTx runs fn in a transaction of its own, committed when fn returns no error.
func (s *Store) inNewTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// notifyCreated wakes the workers of the queues that got a due task, after the insert
// committed (create_tasks.sql, $13), through the store's wake sender: in a statement
// shared with the creates that commit meanwhile, sent without making the caller wait
// (wakeups.go). A wake-up lost (an error, a crash) costs the workers at most their poll
// interval: the idle watcher finds due tasks by itself.
func (s *Store) notifyCreated(results []store.CreateResult) {
	s.wakeForDue(func(yield func(*store.Task) bool) {
		for _, r := range results {
			if !r.Existing && !yield(r.Task) {
				return
			}
		}
	})
}

// wakeForDue hands the wake sender, once each, the queues of the tasks that are PENDING
// and were due when created: a task created for later is found by the idle watcher.
func (s *Store) wakeForDue(tasks iter.Seq[*store.Task]) {
	var queues []string
	for t := range tasks {
		if t.Status == store.StatusPending && !t.ScheduledFor.After(t.CreatedAt) && !slices.Contains(queues, t.Queue) {
			queues = append(queues, t.Queue)
		}
	}
	if len(queues) > 0 {
		s.wake.wake(queues)
	}
}

// sendWakeUps notifies queues' workers in a transaction of its own that commits without
// waiting for its WAL flush (notify_tasks.sql): it changes no data, and PostgreSQL
// serializes notifying commits, so a flush under that lock made concurrent creates
// commit one at a time.
func (s *Store) sendWakeUps(ctx context.Context, queues []string) {
	_, _ = s.pool.Exec(ctx, sqlNotifyTasks, planPerCall, queues)
}

// CreateTasksTx is CreateTasks inside the caller's transaction: the tasks exist only if
// the caller commits (the transactional outbox pattern). An error leaves tx aborted, as
// any failed statement does.
func (s *Store) CreateTasksTx(ctx context.Context, tx pgx.Tx, params []store.CreateParams) ([]store.CreateResult, error) {
	inTx := func(ctx context.Context, fn func(pgx.Tx) error) error { return fn(tx) }
	return createTasks(ctx, tx, inTx, params, false)
}

// createTasks inserts the tasks; notifyAfter says that the caller sends the workers'
// wake-up itself once the statement committed (notifyCreated), instead of the insert
// trigger. A batch without idempotency keys or delays is copied (copyTasks) in the
// transaction inTx runs (a new one, or the caller's); any other runs create_tasks.sql on q.
func createTasks(ctx context.Context, q querier, inTx func(context.Context, func(pgx.Tx) error) error,
	params []store.CreateParams, notifyAfter bool) ([]store.CreateResult, error) {
	ps := slices.Clone(params)
	for i := range ps {
		if err := ps[i].Normalize(); err != nil {
			if len(ps) > 1 {
				return nil, fmt.Errorf("create tasks: task %d: %w", i, err)
			}
			return nil, fmt.Errorf("create tasks: %w", err)
		}
	}
	if len(ps) == 0 {
		return []store.CreateResult{}, nil
	}
	if copyable(ps) {
		var results []store.CreateResult
		err := inTx(ctx, func(tx pgx.Tx) (err error) {
			results, err = copyTasks(ctx, tx, ps, notifyAfter)
			return err
		})
		if err != nil {
			return nil, translate("create tasks", err)
		}
		return results, nil
	}
	results := make([]store.CreateResult, len(ps))

	// One row per distinct key (a repeated key resolves to its first task, below), keyed
	// tasks sorted by key so that concurrent batches lock existing tasks in one order.
	send := make([]int, 0, len(ps))
	firstWithKey := map[string]int{}
	for i, p := range ps {
		if p.IdempotencyKey != "" {
			if _, dup := firstWithKey[p.IdempotencyKey]; dup {
				continue
			}
			firstWithKey[p.IdempotencyKey] = i
		}
		send = append(send, i)
	}
	if len(firstWithKey) > 1 {
		slices.SortStableFunc(send, func(a, b int) int { return cmp.Compare(ps[a].IdempotencyKey, ps[b].IdempotencyKey) })
	}

	n := len(send)
	var (
		ids       = make([]uuid.UUID, n)
		queues    = make([]string, n)
		kinds     = make([]string, n)
		payloads  = make([]json.RawMessage, n)
		prios     = make([]int32, n)
		schedules = make([]pgtype.Timestamptz, n)
		maxes     = make([]int32, n)
		keys      = make([]string, n)
		timeouts  = make([]int32, n)
		delays    = make([]int64, n)  // microseconds
		traces    = make([][]byte, n) // jsonb; nil = NULL
		groups    = make([]string, n)
		byID      = make(map[uuid.UUID]int, n)
	)
	var err error
	for k, i := range send {
		p := &ps[i]
		ids[k], queues[k], kinds[k], payloads[k] = p.ID, p.Queue, p.Kind, p.Payload
		prios[k], maxes[k], timeouts[k] = int32(p.Priority), int32(p.MaxAttempts), int32(p.TimeoutSeconds)
		schedules[k] = pgtype.Timestamptz{Time: p.ScheduledFor, Valid: !p.ScheduledFor.IsZero()}
		delays[k] = p.Delay.Microseconds()
		keys[k], groups[k] = p.IdempotencyKey, p.GroupKey
		if traces[k], err = traceContextJSON(p.TraceContext); err != nil {
			return nil, fmt.Errorf("create tasks: %w", err)
		}
		byID[p.ID] = i
	}
	var rows pgx.Rows
	if n == 1 {
		// One task, as most producers send them: the same insert with scalar parameters.
		sql := sqlCreateTask
		if len(firstWithKey) == 0 {
			sql = sqlCreateTaskKeyless
		}
		rows, err = q.Query(ctx, sql, pgtype.UUID{Bytes: ids[0], Valid: true}, queues[0], kinds[0],
			payloads[0], prios[0], schedules[0], maxes[0], keys[0], timeouts[0], delays[0], traces[0],
			groups[0], notifyAfter)
	} else {
		sql := sqlCreateTasks
		if len(firstWithKey) == 0 {
			sql = sqlCreateTasksKeyless
		}
		rows, err = q.Query(ctx, sql, uuidArgs(ids), queues, kinds, payloads, prios,
			schedules, maxes, keys, timeouts, delays, traces, groups, notifyAfter)
	}
	if err != nil {
		return nil, translate("create tasks", err)
	}
	defer rows.Close()
	var inserted bool
	r := newTaskReader([]any{&inserted})
	for rows.Next() {
		task, err := r.read(rows)
		if err != nil {
			return nil, translate("create tasks", err)
		}
		// A new task is found by its id, an existing one by the key that named it.
		i, ok := byID[task.ID]
		if !inserted {
			i, ok = firstWithKey[task.IdempotencyKey]
		}
		if ok {
			results[i] = store.CreateResult{Task: task, Existing: !inserted}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, translate("create tasks", err)
	}
	for i, p := range ps {
		if results[i].Task != nil {
			continue
		}
		first, ok := firstWithKey[p.IdempotencyKey]
		if !ok || results[first].Task == nil {
			return nil, fmt.Errorf("create tasks: no row returned for task %s", p.ID)
		}
		task := *results[first].Task
		results[i] = store.CreateResult{Task: &task, Existing: true}
	}
	return results, nil
}

// GetTask returns one task, ErrNotFound when there is none.
func (s *Store) GetTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	t, err := s.getTask(ctx, id)
	if err != nil {
		return nil, translate("get task", err)
	}
	return t, nil
}

// getTask reads one task with the database's clock at the read (Task.ReadAt); errors
// untranslated.
func (s *Store) getTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	var readAt time.Time
	var ts taskScan
	var fs flowScan
	if err := s.pool.QueryRow(ctx, sqlGetTask, id).Scan(append(append([]any{&readAt}, ts.dest()...), fs.dest()...)...); err != nil {
		return nil, err
	}
	t := ts.result()
	fs.apply(t)
	t.ReadAt = readAt.UTC()
	return t, nil
}

// ListTasks pages through tasks, newest first.
func (s *Store) ListTasks(ctx context.Context, params store.ListParams) ([]*store.Task, string, error) {
	limit, maxBytes, err := params.Check()
	if err != nil {
		return nil, "", fmt.Errorf("list tasks: %w", err)
	}
	statuses := params.Statuses
	var after pgtype.UUID
	if params.Cursor != "" {
		id, err := store.DecodeTaskCursor(params.Cursor)
		if err != nil {
			return nil, "", fmt.Errorf("list tasks: %w", err)
		}
		after = nullUUID(id)
	}
	// An unnamed statement is planned for the filters at hand (a cached generic plan could
	// not pick the status index for one call and the id index for the next).
	var rows pgx.Rows
	if len(statuses) == 0 && params.Queue == "" && params.Kind == "" {
		rows, err = s.pool.Query(ctx, sqlListTasks, pgx.QueryExecModeCacheDescribe,
			nil, "", "", after, limit+1, maxBytes)
	} else {
		waiting, running := splitRunning(params.Statuses)
		rows, err = s.pool.Query(ctx, listTasksFiltered(params.Queue, params.Kind), pgx.QueryExecModeCacheDescribe,
			waiting, params.Queue, params.Kind, after, limit+1, maxBytes, running)
	}
	tasks, err := collectTasks(rows, err)
	if err != nil {
		return nil, "", translate("list tasks", err)
	}
	page, next := store.ListPage(tasks, limit, maxBytes)
	return page, next, nil
}

// maxRaceRetries bounds the loops of CancelTask and ReplayTask, which run their write
// again when the task changed status between the write and the look-up explaining why
// it wrote nothing.
const maxRaceRetries = 5

// CancelTask cancels a PENDING or ENQUEUED task at once and asks the owner of a
// PROCESSING one to stop. An already CANCELED task is returned unchanged.
func (s *Store) CancelTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	for range maxRaceRetries {
		var t *store.Task
		err := retryDeadlock(func() (err error) {
			t, err = scanTask(s.pool.QueryRow(ctx, sqlCancelTask, id))
			return err
		})
		if err == nil {
			return t, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, translate("cancel task", err)
		}
		// Nothing to cancel: say why.
		cur, err := s.getTask(ctx, id)
		if err != nil {
			return nil, translate("cancel task", err)
		}
		switch cur.Status {
		case store.StatusCanceled:
			return cur, nil
		case store.StatusSucceeded, store.StatusFailed, store.StatusDead:
			return nil, fmt.Errorf("cancel task: %w: task %s is %s", store.ErrIllegalTransition, id, cur.Status)
		}
		// Replayed between the two statements: cancel what it is now.
	}
	return nil, fmt.Errorf("cancel task: task %s keeps changing status; try again", id)
}

// ReplayTask moves a DEAD, FAILED or CANCELED task back to PENDING.
func (s *Store) ReplayTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	for range maxRaceRetries {
		t, err := scanTask(s.pool.QueryRow(ctx, sqlReplayTask, id))
		if err == nil {
			return t, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, translate("replay task", err)
		}
		// Nothing to replay: say why.
		cur, err := s.getTask(ctx, id)
		if err != nil {
			return nil, translate("replay task", err)
		}
		if !cur.Status.Terminal() || cur.Status == store.StatusSucceeded {
			return nil, fmt.Errorf("replay task: %w: task %s is %s", store.ErrIllegalTransition, id, cur.Status)
		}
		// It became replayable between the two statements: replay it now.
	}
	return nil, fmt.Errorf("replay task: task %s keeps changing status; try again", id)
}

// listTasksFiltered is list_tasks_filtered.sql for a queue and kind filter ("" = any):
// the (queue, kind) pairs it looks in are the given ones, or every existing value of the
// one not given, or, with neither, none (the status index alone).
func listTasksFiltered(queue, kind string) string {
	pairs, match := sqlListPairsBoth, "\n          AND t.queue = p.queue AND t.kind = p.kind"
	switch {
	case queue == "" && kind == "":
		pairs, match = sqlListPairsAny, ""
	case kind == "":
		pairs = sqlListPairsKinds
	case queue == "":
		pairs = sqlListPairsQueues
	}
	return strings.NewReplacer("{{pairs}}", pairs, "{{pair_match}}", match).Replace(sqlListTasksFiltered)
}

// splitRunning splits a status filter (empty = every status) into the statuses listed
// from tasks_list and tasks_status_id, and whether PROCESSING tasks are wanted (they are
// in neither index).
func splitRunning(statuses []store.Status) (waiting []string, running bool) {
	if len(statuses) == 0 {
		statuses = store.AllStatuses
	}
	for _, st := range statuses {
		if st == store.StatusProcessing {
			running = true
		} else if !slices.Contains(waiting, string(st)) {
			waiting = append(waiting, string(st))
		}
	}
	return waiting, running
}
