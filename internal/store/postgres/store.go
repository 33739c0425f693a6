// Package postgres is the production task store: PostgreSQL through pgx.
//
// Every method is one SQL statement (one round trip) on its common path; the statements
// live in queries/*.sql. The database enforces the task state machine itself (see
// migrations/0001_tasks.up.sql), so the adapter's job is to phrase each operation as a
// conditional write and translate the outcome into the store package's sentinel errors.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

var _ store.Store = (*Store)(nil)

// Store implements store.Store on a pgx pool.
type Store struct {
	pool *pgxpool.Pool

	// Listeners started by WaitForTasks run until their own context ends or Close.
	listenCtx  context.Context
	stopListen context.CancelFunc
	listeners  sync.WaitGroup
	mu         sync.Mutex
	closed     bool
	listenCfg  *pgx.ConnConfig // nil: the pool's (ListenWith)

	// flowControlled: queues whose last claims went through rota.claim_limited (limits.go).
	flowControlled flowControlledQueues

	// wake sends CreateTasks' wake-ups (wakeups.go).
	wake *wakeSender
}

// New returns a store on pool. The caller owns the pool: Close does not close it.
func New(pool *pgxpool.Pool) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{pool: pool, listenCtx: ctx, stopListen: cancel}
	s.wake = newWakeSender(s.sendWakeUps)
	return s
}

// Close sends the wake-ups of CreateTasks not yet sent, stops the listeners started by
// WaitForTasks (closing their channels) and waits for them. It does not close the pool
// (close it after the store).
func (s *Store) Close() {
	s.wake.close()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopListen()
	s.listeners.Wait()
}

// querier is what both a pool and a transaction offer; every statement runs on one, so
// that CreateTasks and CreateTasksTx share their code.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

var (
	_ querier = (*pgxpool.Pool)(nil)
	_ querier = (pgx.Tx)(nil)
)

// The constraint name the state-machine trigger reports illegal transitions under.
const transitionConstraint = "tasks_status_transition"

// translate maps database errors to the store's sentinel errors and adds op as context:
// no row -> ErrNotFound, a state-machine violation -> ErrIllegalTransition, a unique
// violation -> ErrConflict. Other errors (connection trouble, timeouts) are wrapped as
// they are, so that callers can still tell a transient failure.
func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23514" && pgErr.ConstraintName == transitionConstraint:
			return fmt.Errorf("%s: %w: %s", op, store.ErrIllegalTransition, pgErr.Message)
		case pgErr.Code == "23505":
			return fmt.Errorf("%s: %w: %s (%s)", op, store.ErrConflict, pgErr.Message, pgErr.ConstraintName)
		case pgErr.Code == "22021" || pgErr.Code == "22P05":
			// Text PostgreSQL cannot store (NUL, invalid UTF-8): the caller's input, not a
			// fault of ours. Validation should have caught it first; this keeps it a 400.
			return fmt.Errorf("%s: %w: %s", op, store.ErrInvalid, pgErr.Message)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// taskScan holds the scan targets of one task row: the columns every task query returns,
// in this order (see queries/get_task.sql).
type taskScan struct {
	task           store.Task
	id             pgtype.UUID
	idempotencyKey pgtype.Text
	workerID       pgtype.Text
	leaseToken     pgtype.UUID
	leaseExpiresAt pgtype.Timestamptz
	cancelReqAt    pgtype.Timestamptz
	enqueuedAt     pgtype.Timestamptz
	startedAt      pgtype.Timestamptz
	completedAt    pgtype.Timestamptz
	lastError      pgtype.Text
	groupKey       pgtype.Text
	status         string
	output         []byte // jsonb; nil = NULL
}

// dest are the scan targets of a task's columns. The payload is scanned as bytes: into
// a json.RawMessage pgx would run encoding/json over it (the jsonb column is valid JSON
// already), a full parse of every payload of every claim and every read.
func (s *taskScan) dest() []any {
	t := &s.task
	return []any{&s.id, &t.Queue, &t.Kind, (*[]byte)(&t.Payload), &s.status, &t.Priority, &t.ScheduledFor,
		&t.AttemptCount, &t.MaxAttempts, &s.idempotencyKey, &t.TimeoutSeconds, &s.workerID,
		&s.leaseToken, &s.leaseExpiresAt, &s.cancelReqAt, &s.enqueuedAt, &s.startedAt,
		&s.completedAt, &s.lastError, &t.CreatedAt, &t.UpdatedAt, &s.output, &s.groupKey}
}

func (s *taskScan) result() *store.Task {
	t := s.task
	t.ID = uuid.UUID(s.id.Bytes)
	t.Status = store.Status(s.status)
	t.IdempotencyKey = s.idempotencyKey.String
	t.WorkerID = s.workerID.String
	if s.leaseToken.Valid {
		t.LeaseToken = uuid.UUID(s.leaseToken.Bytes)
	}
	t.LeaseExpiresAt = timePtr(s.leaseExpiresAt)
	t.CancelRequestedAt = timePtr(s.cancelReqAt)
	t.EnqueuedAt = timePtr(s.enqueuedAt)
	t.ProcessingStartedAt = timePtr(s.startedAt)
	t.CompletedAt = timePtr(s.completedAt)
	t.LastError = s.lastError.String
	t.GroupKey = s.groupKey.String
	if s.output != nil {
		t.Output = json.RawMessage(s.output)
	}
	t.ScheduledFor = t.ScheduledFor.UTC()
	t.CreatedAt = t.CreatedAt.UTC()
	t.UpdatedAt = t.UpdatedAt.UTC()
	return &t
}

// scanTask reads one task row; pre are scan targets for columns before the task's.
func scanTask(row pgx.Row, pre ...any) (*store.Task, error) {
	return newTaskReader(pre).read(row)
}

// taskReader reads the rows of a multi-row task query into one set of scan targets,
// made once: pre are the targets of the columns before the task's, post of those after.
// Each scan sets every target (a NULL too), and what a task keeps is copied out
// (taskScan.result) or was freshly allocated by pgx (strings, byte slices), so no row
// sees another's values. Targets made per row were a third of the bytes a draining
// worker allocated (docs/performance.md, session 14).
type taskReader struct {
	s    taskScan
	dest []any
}

func newTaskReader(pre []any, post ...any) *taskReader {
	r := &taskReader{}
	r.dest = slices.Concat(pre, r.s.dest(), post)
	return r
}

// read scans row and returns its task, a new one.
func (r *taskReader) read(row pgx.Row) (*store.Task, error) {
	if err := row.Scan(r.dest...); err != nil {
		return nil, err
	}
	return r.s.result(), nil
}

// collectTasks reads every row of a task query.
func collectTasks(rows pgx.Rows, err error) ([]*store.Task, error) {
	if err != nil {
		return nil, err
	}
	r := newTaskReader(nil)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Task, error) {
		return r.read(row)
	})
}

func timePtr(ts pgtype.Timestamptz) *time.Time {
	if !ts.Valid {
		return nil
	}
	t := ts.Time.UTC()
	return &t
}

// nullUUID is id as a query argument, NULL for uuid.Nil.
func nullUUID(id uuid.UUID) pgtype.UUID {
	return pgtype.UUID{Bytes: id, Valid: id != uuid.Nil}
}

// flowScan holds the scan targets of a task's flow columns (migration 0019), in this
// order: flow_id, flow_step, flow_index, flow_item, flow_inputs (the step's inputs, read
// from its rota.flow_steps row: the task row does not carry them).
type flowScan struct {
	id     pgtype.UUID
	step   pgtype.Text
	index  pgtype.Int4
	item   []byte
	inputs []byte
}

func (f *flowScan) dest() []any {
	return []any{&f.id, &f.step, &f.index, &f.item, &f.inputs}
}

// apply sets t's flow fields: none for a plain task; Item and Index only for a task of a
// for_each step (flow_item set; a single-task step's flow_index is 0 and means nothing).
func (f *flowScan) apply(t *store.Task) {
	if !f.id.Valid {
		return
	}
	t.FlowID, t.Step, t.Inputs = uuid.UUID(f.id.Bytes), f.step.String, f.inputs
	if f.item != nil {
		i := int(f.index.Int32)
		t.Item, t.Index = f.item, &i
	}
}

// uuidArgs is ids as a uuid[] argument that pgx encodes directly. A []uuid.UUID is
// encoded element by element through uuid.UUID's driver.Valuer (a string, parsed back)
// after a failed plan that builds an error with fmt: measured, a fifth of a draining
// worker's CPU went there.
func uuidArgs(ids []uuid.UUID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = pgtype.UUID{Bytes: id, Valid: true}
	}
	return out
}
