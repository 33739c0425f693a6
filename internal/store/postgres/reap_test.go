package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
)

// TestReapExpiredWithinLooksBackOnlySoFar: with ExpiredWithin, a lease that expired
// longer ago is left alone and one that expired within it is reaped; without it, both.
func TestReapExpiredWithinLooksBackOnlySoFar(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	mustCreate(t, st, store.CreateParams{Kind: "old"}, store.CreateParams{Kind: "recent"})
	claimed := mustClaim(t, st, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w",
		Limit: 2, LeaseDuration: time.Hour})
	if len(claimed) != 2 {
		t.Fatalf("claimed %d", len(claimed))
	}
	exec(t, pool, `UPDATE rota.tasks SET lease_expires_at = now() - CASE kind WHEN 'old' THEN interval '1 hour' ELSE interval '1 second' END`)
	reap := func(within time.Duration) int {
		t.Helper()
		n, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10, BackoffBase: time.Second, BackoffMax: time.Second, ExpiredWithin: within})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := reap(time.Minute); n != 1 {
		t.Fatalf("reaped %d leases that expired within a minute, want 1 (the recent one)", n)
	}
	var oldStatus string
	if err := pool.QueryRow(ctx, `SELECT status FROM rota.tasks WHERE kind = 'old'`).Scan(&oldStatus); err != nil || oldStatus != "PROCESSING" {
		t.Fatalf("the lease that expired an hour ago: %s, %v; want it left PROCESSING", oldStatus, err)
	}
	if n := reap(0); n != 1 {
		t.Fatalf("a full reap took %d, want 1 (the old one)", n)
	}
	if _, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 10, ExpiredWithin: -time.Second}); err == nil {
		t.Fatal("a negative ExpiredWithin was accepted")
	}
}

// TestReapLookBackUnderAHeldTransaction: while a transaction holds vacuum back, the index
// entries of every version that was once PROCESSING stay, and a reap that looks at every
// expired lease walks all of them; one that looks back a second does not.
func TestReapLookBackUnderAHeldTransaction(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	const n = 2000
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Kind: "noop"}
	}
	mustCreate(t, st, params...)
	// The held transaction: a snapshot older than every change below.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM rota.tasks`); err != nil {
		t.Fatal(err)
	}
	// Every task claimed with a lease of a millisecond and finished: n dead PROCESSING
	// versions whose leases have expired.
	claimed := mustClaim(t, st, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w",
		Limit: n, LeaseDuration: time.Millisecond})
	outcomes := make([]store.Outcome, len(claimed))
	for i, c := range claimed {
		outcomes[i] = store.Outcome{TaskID: c.ID, LeaseToken: c.LeaseToken, Kind: store.Succeed}
	}
	if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // those leases now expired more than a second ago
	read := func(within time.Duration) int64 {
		t.Helper()
		before := indexTuplesRead(t, pool)
		if _, err := st.ReapExpiredLeases(ctx, store.ReapParams{Limit: 1000, BackoffBase: time.Second, BackoffMax: time.Second, ExpiredWithin: within}); err != nil {
			t.Fatal(err)
		}
		return indexTuplesRead(t, pool) - before
	}
	short, full := read(time.Second), read(0)
	t.Logf("index entries read: looking back a second %d, every expired lease %d", short, full)
	if short > 100 {
		t.Errorf("a reap looking back a second read %d index entries of rota.tasks, want a few", short)
	}
	if full < n {
		t.Errorf("a full reap read %d index entries, want at least %d: the held transaction no longer keeps them?", full, n)
	}
}
