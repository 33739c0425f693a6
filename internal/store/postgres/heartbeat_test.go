package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// claimN claims n new noop tasks of the default queue for a lease of a minute.
func claimN(t *testing.T, st *postgres.Store, n int) []*store.Task {
	t.Helper()
	createNoop(t, st, n)
	tasks, err := st.ClaimTasks(context.Background(), store.ClaimParams{Queue: "default", From: store.StatusPending,
		WorkerID: "w", Limit: n, LeaseDuration: time.Minute})
	if err != nil || len(tasks) != n {
		t.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	return tasks
}

func leasesOf(tasks []*store.Task) []store.Lease {
	leases := make([]store.Lease, len(tasks))
	for i, task := range tasks {
		leases[i] = store.Lease{TaskID: task.ID, LeaseToken: task.LeaseToken}
	}
	return leases
}

// TestHeartbeatManyWaitsOnlyForAHeldRow: the batch skips a task row another transaction
// holds, extends the rest at once, and extends the held one after that transaction
// commits (queries/heartbeat_many.sql: SKIP LOCKED, then Heartbeat of the one).
func TestHeartbeatManyWaitsOnlyForAHeldRow(t *testing.T) {
	st, pool := newStore(t)
	ctx := context.Background()
	tasks := claimN(t, st, 3)
	held := tasks[1]
	tx, holder := beginHolding(t, pool, `UPDATE rota.tasks SET updated_at = now() WHERE id = $1`, held.ID)

	type result struct {
		res []store.HeartbeatResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := st.HeartbeatMany(ctx, store.HeartbeatManyParams{Leases: leasesOf(tasks), LeaseDuration: time.Hour})
		done <- result{res, err}
	}()
	waitForLockWaiter(t, pool, holder, done)
	// The others were extended by the batch statement, which has committed.
	for _, task := range []*store.Task{tasks[0], tasks[2]} {
		var left time.Duration
		if err := pool.QueryRow(ctx, `SELECT lease_expires_at - now() FROM rota.tasks WHERE id = $1`, task.ID).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left < 50*time.Minute {
			t.Fatalf("task %s's lease has %s left while the held row waits, want about an hour", task.ID, left)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	for i, res := range r.res {
		if res.Err != nil || time.Until(res.LeaseExpiresAt) < 50*time.Minute {
			t.Fatalf("lease %d: %+v, want extended by an hour", i, res)
		}
	}
}

// TestHeartbeatManyBesideOutcomesNeverDeadlocks: a worker's heartbeat batch and its
// outcome batches lock the same task rows in different orders; neither may wait for the
// other while holding a row the other wants (a deadlock, which PostgreSQL would end by
// failing one of them).
func TestHeartbeatManyBesideOutcomesNeverDeadlocks(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	for round := range 5 {
		tasks := claimN(t, st, 200)
		reversed := leasesOf(tasks)
		for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
			reversed[i], reversed[j] = reversed[j], reversed[i]
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 2 {
			wg.Go(func() {
				if _, err := st.HeartbeatMany(ctx, store.HeartbeatManyParams{Leases: reversed, LeaseDuration: time.Minute}); err != nil {
					errs <- err
				}
			})
		}
		for part := range 4 {
			wg.Go(func() {
				var outcomes []store.Outcome
				for i := part; i < len(tasks); i += 4 {
					outcomes = append(outcomes, store.Outcome{TaskID: tasks[i].ID, LeaseToken: tasks[i].LeaseToken, Kind: store.Succeed})
				}
				res, err := st.RecordOutcomes(ctx, outcomes)
				if err != nil {
					errs <- err
					return
				}
				for _, r := range res {
					if r.Err != nil {
						errs <- r.Err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// TestHeartbeatManyNeverScansTasks: the batch reaches each task by its primary key,
// whatever the table's statistics say (planned per call).
func TestHeartbeatManyNeverScansTasks(t *testing.T) {
	ctx := context.Background()
	pool, st := emptyTableStore(t)
	for range 10 {
		if _, err := st.HeartbeatMany(ctx, store.HeartbeatManyParams{
			Leases: []store.Lease{{TaskID: store.NewID(), LeaseToken: store.NewID()}}, LeaseDuration: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	createNoop(t, st, 20000)
	tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending,
		WorkerID: "w", Limit: 500, LeaseDuration: time.Minute})
	if err != nil || len(tasks) != 500 {
		t.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	assertIndexBound(t, pool, "heartbeating 500 of 20,000 tasks", 3000, func() {
		res, err := st.HeartbeatMany(ctx, store.HeartbeatManyParams{Leases: leasesOf(tasks), LeaseDuration: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	})
}
