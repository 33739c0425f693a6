package postgres_test

import (
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// A plain queue whose task came in between the plain claim (which found nothing) and
// rota.claim_limited (which took it) looked flow controlled to the store; under a steady
// load that happened all the time, and every later claim then went through the slower
// limited function. rota.claim_limited's report row says the queue is plain (it reads
// the settings and looks for grouped tasks anyway), and the store keeps claiming it
// through the plain statement; a queue with a limit or grouped tasks stays on the
// limited path.
func TestPlainQueueRacedClaimStaysOnPlainPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limited bool
		patch   *store.QueuePatch
		group   func(int) string
	}{
		{"plain", false, nil, noGroup},
		{"concurrency limit", true, &store.QueuePatch{Concurrency: intChange(1000)}, noGroup},
		{"grouped tasks", true, nil, func(int) string { return "tenant" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := newStore(t)
			const queue = "q"
			if tc.patch != nil {
				setQueue(t, st, queue, *tc.patch)
			}
			createN(t, st, queue, 1, tc.group)
			// What ClaimTasks runs once its plain statement found nothing due and the
			// task came in just after.
			tasks, err := postgres.ClaimLimited(st, store.ClaimParams{Queue: queue, From: store.StatusPending,
				WorkerID: "w", Limit: 10, LeaseDuration: time.Minute, Report: &store.ClaimReport{}})
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			if len(tasks) != 1 {
				t.Fatalf("the limited claim took %d tasks, want the one that arrived", len(tasks))
			}
			if got := postgres.FlowControlledRecently(st, queue); got != tc.limited {
				t.Fatalf("the next claim skips the plain statement: %v, want %v", got, tc.limited)
			}
		})
	}
}

// The limited claim that tells a raced plain queue from a flow-controlled one is planned
// once per session, possibly from the statistics of an empty table (retention emptied
// it, autovacuum analyzed it, the table filled again): it must still probe indexes,
// never scan rota.tasks, and the queue must stay plain.
func TestFlowControlRecheckNeverScansTasks(t *testing.T) {
	pool, st := emptyTableStore(t)
	createNoop(t, st, 20000) // in the default queue; the statistics still say empty
	const queue = "q"
	createN(t, st, queue, 1, noGroup)
	assertIndexBound(t, pool, "a limited claim of a plain queue whose task came in late", 1000, func() {
		tasks, err := postgres.ClaimLimited(st, store.ClaimParams{Queue: queue, From: store.StatusPending,
			WorkerID: "w", Limit: 10, LeaseDuration: time.Minute})
		if err != nil || len(tasks) != 1 {
			t.Fatalf("claim: %d tasks, %v", len(tasks), err)
		}
	})
	if postgres.FlowControlledRecently(st, queue) {
		t.Fatal("the plain queue is taken for a flow-controlled one")
	}
}
