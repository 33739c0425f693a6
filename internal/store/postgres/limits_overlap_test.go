package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
)

// Limited claims that overlap (migration 0036, docs/architecture.md "Flow control in the
// claim"): a claim of a queue whose only limit is group_concurrency takes no queue lock
// (groups another open claim holds are skipped). The test holds one claim open in a
// transaction of its own and watches what a second claim does.

// openClaim runs a poll claim of up to limit tasks of queue in a transaction it leaves
// open (committed or rolled back by the caller) and returns how many it claimed.
func openClaim(t *testing.T, pool *pgxpool.Pool, queue string, limit int) (pgx.Tx, int) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM rota.claim_limited_pending($1, $2, 'open', '1 minute', NULL)
		WHERE id IS NOT NULL`, queue, limit).Scan(&n); err != nil {
		t.Fatalf("open claim: %v", err)
	}
	return tx, n
}

type claimResult struct {
	tasks  []*store.Task
	report store.ClaimReport
	err    error
}

// claimBeside runs a poll claim of up to limit tasks of queue through the store while
// another claim is open, failing with waited if it has not returned within 10 s, and
// returns how many tasks it took of each group.
func claimBeside(t *testing.T, st store.Store, queue string, limit int, waited string) (n int, groups map[string]int) {
	t.Helper()
	out := make(chan claimResult, 1)
	go func() {
		var r claimResult
		r.tasks, r.err = st.ClaimTasks(context.Background(), store.ClaimParams{Queue: queue,
			From: store.StatusPending, WorkerID: "second", Limit: limit, LeaseDuration: time.Minute,
			Report: &r.report})
		out <- r
	}()
	var r claimResult
	select {
	case r = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal(waited)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	groups = map[string]int{}
	for _, task := range r.tasks {
		groups[task.GroupKey]++
	}
	return len(r.tasks), groups
}

// TestGroupOnlyClaimsOverlap: while one claim of a group_concurrency-only queue is open,
// another claim returns at once with the groups the first did not take (under 0022 it
// waited for the queue's lock until the first committed), and never a second task of a
// group the first took.
func TestGroupOnlyClaimsOverlap(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	const queue = "gonly"
	setQueue(t, st, queue, store.QueuePatch{GroupConcurrency: intChange(1)})
	createN(t, st, queue, 8, func(i int) string { return fmt.Sprintf("g%d", i%4) })
	// The queue's turn cursor exists, as after its first claim (the first claims insert
	// it, and an insert waits for another open claim's insert of it).
	exec(t, pool, `INSERT INTO rota.queue_cursors (queue, group_key) VALUES ($1, NULL)`, queue)

	tx, n := openClaim(t, pool, queue, 2) // g0 and g1: the first two groups in turn
	if n != 2 {
		t.Fatalf("the open claim took %d tasks, want 2", n)
	}
	took, groups := claimBeside(t, st, queue, 10, "a second claim waited for the open claim of a group-only queue")
	if took != 2 || groups["g2"] != 1 || groups["g3"] != 1 {
		t.Fatalf("the second claim took groups %v, want one task each of g2 and g3", groups)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := mustClaim(t, st, store.ClaimParams{Queue: queue, Limit: 10}); len(got) != 0 {
		t.Fatalf("a claim with every group at its limit took %d tasks", len(got))
	}
}

// TestFairStepPastALockedOldestTask: the fair round's step takes each group's first
// index entry, its oldest task, and locks it by ctid (migration 0038). When another open
// claim holds that task, the round still serves the group's next due task (the probe of
// 0036, kept for this case), as a fairness-only walk did before: the second claim takes
// one task of each group, not two of the group whose oldest task was free.
func TestFairStepPastALockedOldestTask(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	// No settings: grouped tasks alone make the walk fair. Groups g0, g0, g1, g1.
	const queue = "faironly"
	createN(t, st, queue, 4, func(i int) string { return fmt.Sprintf("g%d", i/2) })
	exec(t, pool, `INSERT INTO rota.queue_cursors (queue, group_key) VALUES ($1, NULL)`, queue)

	tx, n := openClaim(t, pool, queue, 1) // g0's oldest task
	if n != 1 {
		t.Fatalf("the open claim took %d tasks, want 1", n)
	}
	took, groups := claimBeside(t, st, queue, 2, "a second claim of a fairness-only queue waited for the open claim")
	if took != 2 || groups["g0"] != 1 || groups["g1"] != 1 {
		t.Fatalf("the second claim took groups %v, want one task each of g0 and g1", groups)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}
