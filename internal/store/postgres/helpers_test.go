package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// newStore returns a store on a fresh database, and the pool for raw SQL.
func newStore(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewPool(t)
	st := postgres.New(pool)
	t.Cleanup(st.Close)
	return st, pool
}

func mustCreate(t testing.TB, st store.Store, params ...store.CreateParams) []*store.Task {
	t.Helper()
	res, err := st.CreateTasks(context.Background(), params)
	if err != nil {
		t.Fatalf("create tasks: %v", err)
	}
	tasks := make([]*store.Task, len(res))
	for i, r := range res {
		tasks[i] = r.Task
	}
	return tasks
}

func mustClaim(t *testing.T, st store.Store, p store.ClaimParams) []*store.Task {
	t.Helper()
	if p.From == "" {
		p.From = store.StatusPending
	}
	if p.WorkerID == "" {
		p.WorkerID = "worker-1"
	}
	if p.Limit == 0 {
		p.Limit = 100
	}
	if p.LeaseDuration == 0 {
		p.LeaseDuration = time.Minute
	}
	tasks, err := st.ClaimTasks(context.Background(), p)
	if err != nil {
		t.Fatalf("claim tasks: %v", err)
	}
	return tasks
}

// claimOnly creates one task and claims it.
func claimOnly(t *testing.T, st store.Store, p store.CreateParams) *store.Task {
	t.Helper()
	created := mustCreate(t, st, p)[0]
	claimed := mustClaim(t, st, store.ClaimParams{Queue: created.Queue, TaskIDs: []uuid.UUID{created.ID}})
	if len(claimed) != 1 {
		t.Fatalf("claimed %d tasks, want 1", len(claimed))
	}
	return claimed[0]
}

func mustGet(t *testing.T, st store.Store, id uuid.UUID) *store.Task {
	t.Helper()
	task, err := st.GetTask(context.Background(), id)
	if err != nil {
		t.Fatalf("get task %s: %v", id, err)
	}
	return task
}

func mustAttempts(t *testing.T, st store.Store, id uuid.UUID) []store.Attempt {
	t.Helper()
	attempts, err := st.ListAttempts(context.Background(), id)
	if err != nil {
		t.Fatalf("list attempts: %v", err)
	}
	return attempts
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// expireLease moves a task's lease expiry into the past, as if its worker vanished.
func expireLease(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) {
	t.Helper()
	exec(t, pool, `UPDATE rota.tasks SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, id)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dbNow is the database's clock, which every timestamp the store writes comes from.
func dbNow(t *testing.T, pool *pgxpool.Pool) time.Time {
	t.Helper()
	var now time.Time
	if err := pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// waitingOnLock reports whether a backend of the test's database is waiting for a lock
// in a statement whose text starts with prefix. The store's statements start with their
// comment ("-- RecordOutcomes: ..."): pg_stat_activity keeps only a statement's first
// kilobyte, so a name further in may be cut off.
func waitingOnLock(t *testing.T, pool *pgxpool.Pool, prefix string) bool {
	t.Helper()
	var waiting bool
	if err := pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock' AND starts_with(query, $1))`, prefix).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	return waiting
}
