package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// TestHotPathNeverScansTasks: statistics gathered while rota.tasks was empty (retention
// emptied it, then autovacuum analyzed it) must not turn the claim and outcome statements
// into sequential scans once the table fills again. PostgreSQL would happily cache such a
// generic plan for a prepared statement; the hot statements are planned per call instead.
// The proof is the table's own seq_scan counter, read on the store's only connection.
func TestHotPathNeverScansTasks(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPoolConns(t, 1) // one connection: one prepared-statement cache, one stats backend
	st := postgres.New(pool)
	defer st.Close()

	exec(t, pool, `ALTER TABLE rota.tasks SET (autovacuum_enabled = false)`)
	exec(t, pool, `VACUUM ANALYZE rota.tasks`)
	exec(t, pool, `VACUUM ANALYZE rota.task_attempts`)
	claim := store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w", Limit: 50, LeaseDuration: time.Minute}
	// Enough executions on the empty table for PostgreSQL to settle on a cached plan.
	for range 10 {
		if _, err := st.ClaimTasks(ctx, claim); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: store.NewID(), LeaseToken: store.NewID(), Kind: store.Succeed}}); err != nil {
			t.Fatal(err)
		}
	}
	params := make([]store.CreateParams, 5000)
	for range 4 {
		for i := range params {
			params[i] = store.CreateParams{Kind: "noop"}
		}
		mustCreate(t, st, params...)
	}

	before := seqScans(t, pool)
	for range 5 {
		tasks, err := st.ClaimTasks(ctx, claim)
		if err != nil || len(tasks) != 50 {
			t.Fatalf("claim: %d tasks, %v", len(tasks), err)
		}
		outcomes := make([]store.Outcome, len(tasks))
		for i, task := range tasks {
			outcomes[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed}
		}
		if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
			t.Fatal(err)
		}
	}
	if after := seqScans(t, pool); after != before {
		t.Fatalf("claiming and completing scanned rota.tasks sequentially %d times", after-before)
	}
}

// seqScans returns rota.tasks' sequential-scan count, after flushing this backend's
// pending statistics.
func seqScans(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	exec(t, pool, `SELECT pg_stat_force_next_flush()`)
	exec(t, pool, `SELECT 1`) // the flush happens at the end of the previous transaction
	var n int64
	if err := pool.QueryRow(context.Background(),
		`SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = 'rota' AND relname = 'tasks'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
