package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// A plain queue whose task came in between the plain claim (which found nothing) and
// rota.claim_limited (which took it) looks flow controlled to the store; under a steady
// load that happened all the time, and every later claim then went through the slower
// limited function. The store reads the queue's settings once more and goes back to the
// plain statement (lease.go, recheckFlowControlled); a queue with a limit stays on the
// limited path.
func TestPlainQueueRacedClaimStaysOnPlainPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limited bool
	}{{"plain", false}, {"concurrency limit", true}} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := newStore(t)
			const queue = "q"
			if tc.limited {
				setQueue(t, st, queue, store.QueuePatch{Concurrency: intChange(1000)})
			}
			arrived := false
			restore := postgres.SetAfterEmptyPlainClaim(func(q string) {
				if q == queue && !arrived {
					arrived = true
					createN(t, st, queue, 1, noGroup)
				}
			})
			defer restore()
			tasks, err := st.ClaimTasks(context.Background(), store.ClaimParams{Queue: queue, From: store.StatusPending,
				WorkerID: "w", Limit: 10, LeaseDuration: time.Minute, Report: &store.ClaimReport{}})
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			if !arrived || len(tasks) != 1 {
				t.Fatalf("the claim took %d tasks (a task arrived between its statements: %v), want the one that arrived", len(tasks), arrived)
			}
			if got := postgres.FlowControlledRecently(st, queue); got != tc.limited {
				t.Fatalf("the next claim skips the plain statement: %v, want %v", got, tc.limited)
			}
		})
	}
}

// The settings read of recheckFlowControlled is planned per call; made from the
// statistics of an empty table (retention emptied it, autovacuum analyzed it, the table
// filled again) it must still probe an index, never scan rota.tasks.
func TestFlowControlRecheckNeverScansTasks(t *testing.T) {
	pool, st := emptyTableStore(t)
	createNoop(t, st, 20000) // in the default queue; the statistics still say empty
	const queue = "q"
	arrived := false
	restore := postgres.SetAfterEmptyPlainClaim(func(q string) {
		if q == queue && !arrived {
			arrived = true
			createN(t, st, queue, 1, noGroup)
		}
	})
	defer restore()
	assertIndexBound(t, pool, "a claim whose task came in between its statements", 1000, func() {
		tasks, err := st.ClaimTasks(context.Background(), store.ClaimParams{Queue: queue, From: store.StatusPending,
			WorkerID: "w", Limit: 10, LeaseDuration: time.Minute})
		if err != nil || len(tasks) != 1 {
			t.Fatalf("claim: %d tasks, %v", len(tasks), err)
		}
	})
	if postgres.FlowControlledRecently(st, queue) {
		t.Fatal("the plain queue is taken for a flow-controlled one")
	}
}
