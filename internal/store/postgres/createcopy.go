package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rotaqueue/rota/internal/store"
)

// copyColumns are the columns a copied batch writes (copyTasks); the others take their
// defaults, the same for every new task: status PENDING, attempt_count 0, created_at and
// updated_at now(), the rest NULL.
var copyColumns = []string{"id", "queue", "kind", "payload", "priority", "scheduled_for",
	"max_attempts", "timeout_seconds", "trace_context", "group_key"}

// copyMinTasks is the smallest batch worth a COPY: a copy takes four round trips
// (BEGIN, the clock, COPY, COMMIT) where the INSERT takes one, which a batch of fewer
// than about 100 tasks does not win back (BenchmarkCreateTasksCopyOrInsert, stock
// cluster, loaded machine: time of the INSERT over the COPY's 0.79-0.95 at 1-50 tasks,
// 0.97-1.15 at 100, 1.05-1.20 at 150-200, 1.38-1.63 at 1,000).
var copyMinTasks = 100

// copyable reports whether a normalized batch is written by COPY (copyTasks) instead of
// create_tasks.sql: it holds at least copyMinTasks tasks, and none has an idempotency key
// (COPY has no ON CONFLICT) or a delay (a delay is added to now() by the SQL, DESIGN.md
// section 9; the batch then takes the INSERT).
func copyable(ps []store.CreateParams) bool {
	if len(ps) < copyMinTasks {
		return false
	}
	for i := range ps {
		if ps[i].IdempotencyKey != "" || ps[i].Delay != 0 {
			return false
		}
	}
	return true
}

// copyTasks writes a copyable batch of normalized tasks with one binary COPY in tx and
// returns them as stored. Why COPY: per 1,000 tasks it is a fraction of the INSERT ...
// SELECT FROM unnest(...) RETURNING's work on both sides (the heap takes the rows a page
// at a time, nothing is sent back to be decoded), and a batch without keys needs none of
// what only the INSERT can do. The stored rows are known without reading them back: the
// ids are the params' (made in Go at Normalize, as for the INSERT), every other column is
// a param or its default, and the times are the transaction's now(), read from the
// database in the same transaction (DESIGN.md section 9: one clock), which is what the
// defaults (created_at, updated_at) and a task due at once (scheduled_for) take. A
// trigger that changed a new row would break this; rota.tasks has none
// (TestCreateTasksReturnsStoredRows compares every field with a read of the row).
//
// notifyAfter is createTasks': the caller wakes the workers after the commit, so the
// insert trigger (which COPY fires as the INSERT does) is told to stay silent.
func copyTasks(ctx context.Context, tx pgx.Tx, ps []store.CreateParams, notifyAfter bool) ([]store.CreateResult, error) {
	var now time.Time
	if err := tx.QueryRow(ctx, sqlCreateTasksClock, notifyAfter).Scan(&now); err != nil {
		return nil, err
	}
	now = now.UTC()
	src := &copySource{ps: ps, now: now, row: -1}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"rota", "tasks"}, copyColumns, src); err != nil {
		return nil, err
	}
	return copiedResults(ps, now), nil
}

// copySource feeds pgx's CopyFrom one task at a time from a reused row (CopyFrom encodes
// each row before asking for the next).
type copySource struct {
	ps   []store.CreateParams
	now  time.Time
	row  int
	vals [10]any
}

func (c *copySource) Next() bool {
	c.row++
	return c.row < len(c.ps)
}

func (c *copySource) Values() ([]any, error) {
	p := &c.ps[c.row]
	trace, err := traceContextJSON(p.TraceContext)
	if err != nil {
		return nil, err
	}
	c.vals = [10]any{
		pgtype.UUID{Bytes: p.ID, Valid: true}, p.Queue, p.Kind, []byte(p.Payload), int16(p.Priority),
		scheduledFor(p, c.now), int32(p.MaxAttempts), int32(p.TimeoutSeconds), trace,
		pgtype.Text{String: p.GroupKey, Valid: p.GroupKey != ""},
	}
	return c.vals[:], nil
}

func (c *copySource) Err() error { return nil }

// scheduledFor is the scheduled_for a copied task is stored with: the given time, or the
// transaction's now() for a task due at once (what create_tasks.sql's coalesce gives).
func scheduledFor(p *store.CreateParams, now time.Time) time.Time {
	if p.ScheduledFor.IsZero() {
		return now
	}
	return p.ScheduledFor
}

// copiedResults are the tasks copyTasks stored, as a read of their rows returns them:
// times in UTC at PostgreSQL's microsecond precision, payloads in a buffer of their own
// (the caller's may be reused).
func copiedResults(ps []store.CreateParams, now time.Time) []store.CreateResult {
	size := 0
	for i := range ps {
		size += len(ps[i].Payload)
	}
	buf := make([]byte, 0, size)
	tasks := make([]store.Task, len(ps))
	results := make([]store.CreateResult, len(ps))
	for i := range ps {
		p := &ps[i]
		start := len(buf)
		buf = append(buf, p.Payload...)
		tasks[i] = store.Task{
			ID: p.ID, Queue: p.Queue, Kind: p.Kind, Payload: buf[start:len(buf):len(buf)],
			Status: store.StatusPending, Priority: p.Priority,
			ScheduledFor: scheduledFor(p, now).Truncate(time.Microsecond).UTC(),
			MaxAttempts:  p.MaxAttempts, TimeoutSeconds: p.TimeoutSeconds, GroupKey: p.GroupKey,
			CreatedAt: now, UpdatedAt: now,
		}
		results[i] = store.CreateResult{Task: &tasks[i]}
	}
	return results
}
