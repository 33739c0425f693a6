package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

// ClaimTasks moves up to params.Limit due tasks to PROCESSING in one statement.
func (s *Store) ClaimTasks(ctx context.Context, params store.ClaimParams) ([]*store.Task, error) {
	params.Report.Reset()
	queue := params.Queue
	if queue == "" {
		queue = store.DefaultQueue
	}
	limit := params.Limit
	if limit == 0 && len(params.TaskIDs) > 0 {
		limit = len(params.TaskIDs)
	}
	switch {
	case params.From != store.StatusPending && params.From != store.StatusEnqueued:
		return nil, fmt.Errorf("claim tasks: %w: can claim from PENDING or ENQUEUED, not %q", store.ErrInvalid, params.From)
	case params.WorkerID == "":
		return nil, fmt.Errorf("claim tasks: %w: worker id is required", store.ErrInvalid)
	case limit < 1:
		return nil, fmt.Errorf("claim tasks: %w: limit must be at least 1, got %d", store.ErrInvalid, params.Limit)
	case params.LeaseDuration <= 0:
		return nil, fmt.Errorf("claim tasks: %w: lease duration must be positive, got %s", store.ErrInvalid, params.LeaseDuration)
	case params.After != nil && (params.After.Priority < math.MinInt16 || params.After.Priority > math.MaxInt16):
		return nil, fmt.Errorf("claim tasks: %w: the hint's priority %d is no task's", store.ErrInvalid, params.After.Priority)
	}

	if params.TaskIDs != nil && len(params.TaskIDs) == 0 {
		return []*store.Task{}, nil
	}
	if s.flowControlled.recently(queue) {
		// The plain statement would claim nothing: save its round trip (limits.go).
		return s.claimLimited(ctx, queue, limit, params)
	}

	var rows pgx.Rows
	var err error
	switch {
	case params.TaskIDs != nil && limit >= len(params.TaskIDs):
		// Every id may be claimed (the SQS worker's claim): one UPDATE, no lock step.
		rows, err = s.pool.Query(ctx, sqlClaimTasksByIDs, planPerCall, queue, params.WorkerID,
			params.LeaseDuration, uuidArgs(params.TaskIDs), string(params.From))
	case params.TaskIDs != nil:
		rows, err = s.pool.Query(ctx, sqlClaimTasksByID, planPerCall, queue, limit, params.WorkerID,
			params.LeaseDuration, uuidArgs(params.TaskIDs), string(params.From))
	default:
		sql := sqlClaimEnqueued
		if params.From == store.StatusPending {
			sql = sqlClaimPending
		}
		// The hint's level, or NULL (no hint: every level is walked from its start).
		var afterLevel pgtype.Int2
		var afterAt time.Time
		var afterID uuid.UUID
		if a := params.After; a != nil {
			afterLevel = pgtype.Int2{Int16: int16(a.Priority), Valid: true}
			afterAt, afterID = a.ScheduledFor, a.ID
		}
		rows, err = s.pool.Query(ctx, sql, planPerCall, queue, limit, params.WorkerID, params.LeaseDuration,
			afterLevel, afterAt, afterID)
	}
	tasks, err := collectClaimedTasks(rows, err)
	if err != nil {
		return nil, translate("claim tasks", err)
	}
	if len(tasks) == 0 {
		// Nothing claimed: the queue may be one the plain statement leaves to flow
		// control (limits.go), or simply have nothing due; rota.claim_limited tells,
		// and takes a task that came in meanwhile either way.
		return s.claimLimited(ctx, queue, limit, params)
	}
	return tasks, nil
}

// collectClaimedTasks reads the rows of a claim: a task, its trace context and its flow
// step.
func collectClaimedTasks(rows pgx.Rows, err error) ([]*store.Task, error) {
	tasks, err := collectClaimedRows(rows, err)
	if err != nil {
		return nil, err
	}
	shareStepInputs(tasks)
	return tasks, nil
}

// shareStepInputs gives every step task of a claim its step's inputs, which the claim
// answers only on its first task of each step (claim_tasks.sql). They share one slice
// (store.Task.Inputs is read-only): a copy per task held a 10,000-element fan-out's
// array once per element of a claim.
func shareStepInputs(tasks []*store.Task) {
	type stepKey struct {
		flow uuid.UUID
		step string
	}
	var inputs map[stepKey][]byte
	for _, t := range tasks {
		if t.FlowID != uuid.Nil && t.Inputs != nil {
			if inputs == nil {
				inputs = map[stepKey][]byte{}
			}
			inputs[stepKey{t.FlowID, t.Step}] = t.Inputs
		}
	}
	for _, t := range tasks {
		if t.FlowID != uuid.Nil && t.Inputs == nil {
			t.Inputs = inputs[stepKey{t.FlowID, t.Step}]
		}
	}
}

func collectClaimedRows(rows pgx.Rows, err error) ([]*store.Task, error) {
	if err != nil {
		return nil, err
	}
	r := newClaimedReader()
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Task, error) {
		return r.read(row)
	})
}

// claimedReader reads the rows of a claim (claim_tasks.sql, rota.claim_limited): a
// task's columns (after pre), its trace context and its flow step's, into one set of
// targets (taskReader).
type claimedReader struct {
	tasks *taskReader
	trace []byte
	fs    flowScan
}

func newClaimedReader(pre ...any) *claimedReader {
	c := &claimedReader{}
	c.tasks = newTaskReader(pre, append([]any{&c.trace}, c.fs.dest()...)...)
	return c
}

// read scans row and returns its task, with its trace context and flow step.
func (c *claimedReader) read(row pgx.Row) (*store.Task, error) {
	t, err := c.tasks.read(row)
	if err != nil {
		return nil, err
	}
	c.fs.apply(t)
	if err := decodeTraceContext(t, c.trace); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeTraceContext sets t's trace context from its jsonb column (nil: none).
func decodeTraceContext(t *store.Task, trace []byte) error {
	if trace == nil {
		return nil
	}
	if err := json.Unmarshal(trace, &t.TraceContext); err != nil {
		return fmt.Errorf("task %s: trace context: %w", t.ID, err)
	}
	return nil
}

// traceContextJSON is a trace context as a jsonb argument, nil (NULL) when empty.
func traceContextJSON(c map[string]string) ([]byte, error) {
	if len(c) == 0 {
		return nil, nil
	}
	return json.Marshal(c)
}

// Heartbeat extends a lease, fenced by its token.
func (s *Store) Heartbeat(ctx context.Context, params store.HeartbeatParams) (*store.Task, error) {
	if params.LeaseDuration <= 0 {
		return nil, fmt.Errorf("heartbeat: %w: lease duration must be positive, got %s", store.ErrInvalid, params.LeaseDuration)
	}
	t, err := scanTask(s.pool.QueryRow(ctx, sqlHeartbeat, planPerCall, params.TaskID, params.LeaseToken, params.LeaseDuration))
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, translate("heartbeat", err)
	}
	// Nothing extended: either there is no such task or the token is not current.
	if _, err := s.getTask(ctx, params.TaskID); err != nil {
		return nil, translate("heartbeat", err)
	}
	return nil, fmt.Errorf("heartbeat: task %s: %w", params.TaskID, store.ErrLeaseLost)
}

// HeartbeatMany extends a batch of leases in one statement (queries/heartbeat_many.sql).
// A lease whose row another transaction holds is extended by Heartbeat on its own,
// which waits for that row; there are few (an outcome being written, a cancel request).
func (s *Store) HeartbeatMany(ctx context.Context, params store.HeartbeatManyParams) ([]store.HeartbeatResult, error) {
	if params.LeaseDuration <= 0 {
		return nil, fmt.Errorf("heartbeat: %w: lease duration must be positive, got %s", store.ErrInvalid, params.LeaseDuration)
	}
	results := make([]store.HeartbeatResult, len(params.Leases))
	if len(params.Leases) == 0 {
		return results, nil
	}
	ids := make([]uuid.UUID, len(params.Leases))
	tokens := make([]uuid.UUID, len(params.Leases))
	for i, l := range params.Leases {
		ids[i], tokens[i] = l.TaskID, l.LeaseToken
		results[i].TaskID = l.TaskID
	}
	rows, err := s.pool.Query(ctx, sqlHeartbeatMany, planPerCall, ids, tokens, params.LeaseDuration)
	if err != nil {
		return nil, translate("heartbeat", err)
	}
	var busy []int
	var (
		ord     int64
		outcome string
		expires *time.Time
		cancel  *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&ord, &outcome, &expires, &cancel}, func() error {
		r := &results[ord-1]
		switch outcome {
		case "extended":
			r.LeaseExpiresAt, r.CancelRequestedAt = *expires, cancel
		case "lost":
			r.Err = fmt.Errorf("heartbeat: task %s: %w", r.TaskID, store.ErrLeaseLost)
		case "not_found":
			r.Err = fmt.Errorf("heartbeat: task %s: %w", r.TaskID, store.ErrNotFound)
		default: // busy
			busy = append(busy, int(ord-1))
		}
		return nil
	})
	if err != nil {
		return nil, translate("heartbeat", err)
	}
	if len(busy) == 0 {
		return results, nil
	}
	held := store.HeartbeatManyParams{Leases: make([]store.Lease, len(busy)), LeaseDuration: params.LeaseDuration}
	for k, i := range busy {
		held.Leases[k] = params.Leases[i]
	}
	beaten, err := store.HeartbeatEach(ctx, held, s.Heartbeat)
	if err != nil {
		return nil, err
	}
	for k, i := range busy {
		results[i] = beaten[k]
	}
	return results, nil
}

// RecordOutcomes writes a batch of outcomes in one statement.
func (s *Store) RecordOutcomes(ctx context.Context, outcomes []store.Outcome) ([]store.OutcomeResult, error) {
	results := make([]store.OutcomeResult, len(outcomes))
	n := len(outcomes)
	var (
		ids      = make([]uuid.UUID, 0, n)
		tokens   = make([]uuid.UUID, 0, n)
		kinds    = make([]string, 0, n)
		errs     = make([]string, 0, n)
		retryIns = make([]int64, 0, n)  // microseconds
		outputs  = make([][]byte, 0, n) // jsonb; nil = NULL
		// sent[k] is the index in outcomes of the k-th outcome sent.
		sent = make([]int, 0, n)
	)
	type lease struct{ task, token uuid.UUID }
	seen := make(map[lease]bool, n)
	for i, o := range outcomes {
		results[i].TaskID = o.TaskID
		switch o.Kind {
		case store.Succeed, store.Retry, store.Release, store.Fail, store.Cancel:
		default:
			return nil, fmt.Errorf("record outcomes: %w: unknown outcome kind %q", store.ErrInvalid, o.Kind)
		}
		if o.RetryIn < 0 {
			return nil, fmt.Errorf("record outcomes: %w: retry delay must not be negative, got %s", store.ErrInvalid, o.RetryIn)
		}
		var output json.RawMessage
		if o.Kind == store.Succeed {
			var err error
			if output, err = store.CheckOutput(o.Output); err != nil {
				// Rejected alone, before its lease counts as seen: the task stays
				// PROCESSING, and a corrected outcome in the same batch is still written.
				results[i].Err = fmt.Errorf("task %s: %w", o.TaskID, err)
				continue
			}
		}
		// The same lease twice in one batch: the first write wins, the second finds the
		// lease gone, exactly as if it came in a later call.
		l := lease{o.TaskID, o.LeaseToken}
		if seen[l] {
			results[i].Err = leaseLost(o.TaskID)
			continue
		}
		seen[l] = true
		ids = append(ids, o.TaskID)
		tokens = append(tokens, o.LeaseToken)
		kinds = append(kinds, string(o.Kind))
		errs = append(errs, store.TruncateError(o.Error))
		retryIns = append(retryIns, o.RetryIn.Microseconds())
		outputs = append(outputs, output)
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return results, nil
	}

	if !slices.ContainsFunc(outputs, func(o []byte) bool { return o != nil }) {
		// No outputs (the usual batch): one NULL array, which unnest pads with NULLs,
		// instead of an array of NULLs that pgx builds by reflection, element by element.
		outputs = nil
	}
	written := make([]bool, len(sent))
	// A retry after a deadlock (rare: two failures of one flow at once, docs/architecture.md
	// "Flows") reruns the whole statement, which wrote nothing.
	err := retryDeadlock(func() error {
		clear(written)
		rows, err := s.pool.Query(ctx, sqlRecordOutcomes, planPerCall, uuidArgs(ids), uuidArgs(tokens), kinds, errs, retryIns, outputs)
		if err != nil {
			return err
		}
		var ord int64
		var status string
		_, err = pgx.ForEachRow(rows, []any{&ord, &status}, func() error {
			k := int(ord) - 1
			if k < 0 || k >= len(sent) {
				return fmt.Errorf("outcome position %d out of range", ord)
			}
			written[k] = true
			results[sent[k]].Status = store.Status(status)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, translate("record outcomes", err)
	}
	for k, i := range sent {
		if !written[k] {
			results[i].Err = leaseLost(outcomes[i].TaskID)
		}
	}
	return results, nil
}

func leaseLost(id uuid.UUID) error {
	return fmt.Errorf("task %s: %w", id, store.ErrLeaseLost)
}

// ReapExpiredLeases ends the attempts of PROCESSING tasks whose lease expired.
func (s *Store) ReapExpiredLeases(ctx context.Context, params store.ReapParams) (int, error) {
	switch {
	case params.Limit < 1:
		return 0, fmt.Errorf("reap expired leases: %w: limit must be at least 1, got %d", store.ErrInvalid, params.Limit)
	case params.BackoffBase < 0 || params.BackoffMax < 0:
		return 0, fmt.Errorf("reap expired leases: %w: backoff must not be negative", store.ErrInvalid)
	case params.ExpiredWithin < 0:
		return 0, fmt.Errorf("reap expired leases: %w: expired-within must not be negative, got %s", store.ErrInvalid, params.ExpiredWithin)
	}
	var n int
	held := params.HeldTaskIDs
	if held == nil {
		held = []uuid.UUID{} // an empty array, not NULL: "<> ALL (NULL)" matches nothing
	}
	err := retryDeadlock(func() error {
		return s.pool.QueryRow(ctx, sqlReapExpiredLeases, planPerCall, params.Limit,
			params.BackoffBase.Seconds(), params.BackoffMax.Seconds(), held, params.ExpiredWithin.Seconds()).Scan(&n)
	})
	if err != nil {
		return 0, translate("reap expired leases", err)
	}
	return n, nil
}

// NextDue reports how long until each queue's earliest PENDING task is due; see
// store.Store.
func (s *Store) NextDue(ctx context.Context, queues []string) (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(queues))
	if len(queues) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, sqlNextDue, planPerCall, queues)
	if err != nil {
		return nil, translate("next due", err)
	}
	defer rows.Close()
	for rows.Next() {
		var q string
		var secs float64
		if err := rows.Scan(&q, &secs); err != nil {
			return nil, translate("next due", err)
		}
		out[q] = time.Duration(secs * float64(time.Second))
	}
	if err := rows.Err(); err != nil {
		return nil, translate("next due", err)
	}
	return out, nil
}
