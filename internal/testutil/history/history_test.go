package history

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// TestHistoryCheckCatchesCorruption (issue #12 item 13): the check the crash and chaos
// tests end with (Problems) passes on the histories Rota writes (retries, a replay, a release, a
// cancel) and fails on each kind of corruption, written by hand past the triggers. The
// check it replaces, attempt_count > max_attempts, could never fail: a CHECK constraint
// refuses such a row, as the first step shows.
func TestHistoryCheckCatchesCorruption(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	st := postgres.New(pool)
	defer st.Close()
	b := &historyBuilder{t: t, st: st}

	first := b.succeededAfterRetry()
	if _, err := pool.Exec(ctx, `UPDATE rota.tasks SET attempt_count = max_attempts + 1 WHERE id = $1`, first); err == nil ||
		!strings.Contains(err.Error(), "tasks_attempts_bounded") {
		t.Fatalf("attempt_count beyond max_attempts: err %v, want the tasks_attempts_bounded CHECK to refuse it", err)
	}

	type corruption struct {
		name  string
		id    uuid.UUID
		sql   string // $1 is the task id; run with triggers off
		want  string // a problem that must be reported
		final store.Status
	}
	cases := []corruption{
		{name: "a second success", id: b.succeededAfterRetry(), want: "2 SUCCEEDED attempts, want 1",
			sql: `INSERT INTO rota.task_attempts (task_id, attempt, worker_id, lease_token, finished_at, outcome)
			      VALUES ($1, 2, 'w', gen_random_uuid(), now(), 'SUCCEEDED')`},
		{name: "a lost attempt row", id: b.succeededAfterRetry(), want: "numbered 2 (a gap",
			sql: `DELETE FROM rota.task_attempts WHERE task_id = $1 AND attempt = 1`},
		{name: "a repeated attempt number", id: b.succeededAfterRetry(), want: "numbered 1 (a gap or a repeat)",
			sql: `UPDATE rota.task_attempts SET attempt = 1 WHERE task_id = $1 AND attempt = 2`},
		{name: "one lease written twice", id: b.succeededAfterRetry(), want: "repeats the lease token",
			sql: `UPDATE rota.task_attempts SET lease_token = (SELECT lease_token FROM rota.task_attempts WHERE task_id = $1 AND attempt = 1)
			      WHERE task_id = $1 AND attempt = 2`},
		{name: "an attempt left open", id: b.succeededAfterRetry(), want: "attempt 1 is still open",
			sql: `UPDATE rota.task_attempts SET finished_at = NULL WHERE task_id = $1 AND attempt = 1`},
		{name: "attempt_count short of the rows", id: b.succeededAfterRetry(), want: "2 attempt rows since the last replay, but attempt_count 1",
			sql: `UPDATE rota.tasks SET attempt_count = 1 WHERE id = $1`},
		{name: "not finished", id: b.succeededAfterRetry(), want: "status PENDING, want SUCCEEDED",
			sql: `UPDATE rota.tasks SET status = 'PENDING', completed_at = NULL WHERE id = $1`},
		{name: "a success before a retry", id: b.dead(), final: store.StatusDead, want: "ended SUCCEEDED, yet the task ran again",
			sql: `UPDATE rota.task_attempts SET outcome = 'SUCCEEDED' WHERE task_id = $1 AND attempt = 1`},
		{name: "more runs than allowed", id: b.dead(), final: store.StatusDead, want: "3 runs counted, more than max_attempts 2",
			sql: `INSERT INTO rota.task_attempts (task_id, attempt, worker_id, lease_token, finished_at, outcome)
			      VALUES ($1, 3, 'w', gen_random_uuid(), now(), 'DEAD')`},
		{name: "dead with attempts left", id: b.dead(), final: store.StatusDead, want: "DEAD after 2 of 3 attempts",
			sql: `UPDATE rota.tasks SET max_attempts = 3 WHERE id = $1`},
		{name: "a replay event miscounting", id: b.replayedThenSucceeded(), want: "a REPLAYED event after 1 runs says 0",
			sql: `UPDATE rota.task_attempts SET attempt = 0 WHERE task_id = $1 AND outcome = 'REPLAYED'`},
		{name: "a lost task", id: b.succeededAfterRetry(), want: "missing from the database",
			sql: `DELETE FROM rota.tasks WHERE id = $1`},
	}
	want := map[uuid.UUID]store.Status{}
	for _, c := range cases {
		want[c.id] = cmpOr(c.final, store.StatusSucceeded)
	}
	// Untouched histories that must pass: a replay, a release (max_attempts raised), a
	// task canceled before it ran, a DEAD task.
	controls := map[uuid.UUID]store.Status{
		b.replayedThenSucceeded(): store.StatusSucceeded,
		b.released():              store.StatusSucceeded,
		b.canceledWaiting():       store.StatusCanceled,
		b.dead():                  store.StatusDead,
		first:                     store.StatusSucceeded,
	}
	for id, s := range controls {
		want[id] = s
	}
	if problems, err := Problems(ctx, pool, want, true); err != nil || len(problems) != 0 {
		t.Fatalf("histories as Rota wrote them: problems %v, err %v; want none", problems, err)
	}

	for _, c := range cases {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Past the triggers (the state machine, the bookkeeping): a corruption only a bug
		// or a hand-written statement could leave.
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, c.sql, c.id); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stranger := b.succeededAfterRetry() // a task nobody expects
	problems, err := Problems(ctx, pool, want, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := strings.Join(problems[c.id], "; "); !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want one saying %q", c.name, got, c.want)
		}
	}
	for id := range controls {
		if p := problems[id]; len(p) > 0 {
			t.Errorf("untouched task %s: problems %q, want none", id, p)
		}
	}
	if got := strings.Join(problems[stranger], "; "); got != "a task the test did not create" {
		t.Errorf("a task the test did not create: problems %q", got)
	}
}

func cmpOr(s, fallback store.Status) store.Status {
	if s == "" {
		return fallback
	}
	return s
}

// historyBuilder makes tasks with the attempt histories Rota writes, through the store,
// each in a queue of its own so that a claim takes exactly that task.
type historyBuilder struct {
	t  *testing.T
	st *postgres.Store
	n  int
}

func (b *historyBuilder) create(maxAttempts int) (uuid.UUID, string) {
	b.t.Helper()
	b.n++
	queue := "h" + strings.Repeat("x", b.n)
	res, err := b.st.CreateTasks(context.Background(), []store.CreateParams{{Queue: queue, Kind: "k", MaxAttempts: maxAttempts}})
	if err != nil {
		b.t.Fatal(err)
	}
	return res[0].Task.ID, queue
}

// run claims the task of queue and records the outcome kind for it.
func (b *historyBuilder) run(queue string, kind store.OutcomeKind) {
	b.t.Helper()
	ctx := context.Background()
	tasks, err := b.st.ClaimTasks(ctx, store.ClaimParams{Queue: queue, From: store.StatusPending, WorkerID: "w",
		Limit: 1, LeaseDuration: time.Minute})
	if err != nil || len(tasks) != 1 {
		b.t.Fatalf("claim from %s: %v, %v", queue, tasks, err)
	}
	res, err := b.st.RecordOutcomes(ctx, []store.Outcome{{TaskID: tasks[0].ID, LeaseToken: tasks[0].LeaseToken, Kind: kind, Error: string(kind)}})
	if err != nil || res[0].Err != nil {
		b.t.Fatalf("record %s: %v, %v", kind, res, err)
	}
}

// succeededAfterRetry: RETRIED, SUCCEEDED.
func (b *historyBuilder) succeededAfterRetry() uuid.UUID {
	id, q := b.create(5)
	b.run(q, store.Retry)
	b.run(q, store.Succeed)
	return id
}

// dead: RETRIED, DEAD (max_attempts 2).
func (b *historyBuilder) dead() uuid.UUID {
	id, q := b.create(2)
	b.run(q, store.Retry)
	b.run(q, store.Retry)
	return id
}

// replayedThenSucceeded: DEAD, REPLAYED, SUCCEEDED (attempt 1 twice, a replay between).
func (b *historyBuilder) replayedThenSucceeded() uuid.UUID {
	id, q := b.create(1)
	b.run(q, store.Retry)
	if _, err := b.st.ReplayTask(context.Background(), id); err != nil {
		b.t.Fatal(err)
	}
	b.run(q, store.Succeed)
	return id
}

// released: a released attempt (RETRIED, max_attempts raised to 2), then SUCCEEDED.
func (b *historyBuilder) released() uuid.UUID {
	id, q := b.create(1)
	b.run(q, store.Release)
	b.run(q, store.Succeed)
	return id
}

// canceledWaiting: canceled before any run.
func (b *historyBuilder) canceledWaiting() uuid.UUID {
	id, _ := b.create(3)
	if _, err := b.st.CancelTask(context.Background(), id); err != nil {
		b.t.Fatal(err)
	}
	return id
}
