package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// Overlap buffer_one and cancel_other for schedules of kind flow (DESIGN.md section 11;
// migration 0029): a held flow is created but not started and starts in the transaction
// that ends the running flow; cancel_other cancels the running flow as CancelFlow does.

// overlapFlow is the flow of these tests: two roots (a, b) and c after both.
func overlapFlow(name string) *store.FlowParams {
	return &store.FlowParams{Name: name, Queue: "ov", Steps: steps(step("a"), step("b"), step("c", "a", "b"))}
}

// claimFlowTick claims the named schedule due at `at` and returns its claim.
func claimFlowTick(t *testing.T, s store.Store, name string, at time.Time) store.ScheduleClaim {
	t.Helper()
	reschedule(t, s, name, at)
	return claimOf(t, claimSchedules(t, s, 10), name)
}

// wantHeldFlow: f is RUNNING with every step WAITING and no task (nothing of it can be
// claimed).
func wantHeldFlow(t *testing.T, s store.Store, id uuid.UUID) {
	t.Helper()
	f := getFlow(t, s, id)
	wantFlowStatus(t, f, store.FlowRunning)
	for _, st := range f.Steps {
		if st.Status != store.StepWaiting || len(st.TaskIDs) != 0 {
			t.Fatalf("held flow %s: step %q is %s with %d tasks, want WAITING with none", id, st.Name, st.Status, len(st.TaskIDs))
		}
	}
}

// wantStartedFlow: f is RUNNING and its roots a and b have a due PENDING task each.
func wantStartedFlow(t *testing.T, s store.Store, id uuid.UUID) {
	t.Helper()
	f := getFlow(t, s, id)
	wantFlowStatus(t, f, store.FlowRunning)
	for _, root := range []string{"a", "b"} {
		task := stepTask(t, s, id, root)
		if task.Status != store.StatusPending || task.ScheduledFor.After(time.Now().Add(clockSkew)) {
			t.Fatalf("flow %s: root %q task is %s, due %s; want PENDING and due", id, root, task.Status, task.ScheduledFor)
		}
	}
	wantStepStatus(t, f, "c", store.StepWaiting)
}

func wantFlowRuns(t *testing.T, s store.Store, name string, current, waiting *uuid.UUID) *store.Schedule {
	t.Helper()
	sc := getSchedule(t, s, name)
	same := func(a, b *uuid.UUID) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	if !same(sc.CurrentRunID, current) || !same(sc.WaitingRunID, waiting) {
		t.Fatalf("schedule %q: current run %v, waiting %v; want %v, %v", name, sc.CurrentRunID, sc.WaitingRunID, current, waiting)
	}
	return sc
}

// endFlow ends a running flow (roots a and b started) by success, failure or cancel.
func endFlow(t *testing.T, s store.Store, id uuid.UUID, how store.FlowStatus) {
	t.Helper()
	switch how {
	case store.FlowSucceeded:
		succeedStep(t, s, stepTask(t, s, id, "a"), "")
		succeedStep(t, s, stepTask(t, s, id, "b"), "")
		succeedStep(t, s, stepTask(t, s, id, "c"), "")
	case store.FlowFailed:
		a := claimID(t, s, stepTask(t, s, id, "a"), store.StatusPending, 30*time.Second)
		recordOK(t, s, outcome(a, store.Fail, "boom"), store.StatusFailed)
	case store.FlowCanceled:
		if _, err := s.CancelFlow(ctx(t), id); err != nil {
			t.Fatalf("CancelFlow: %v", err)
		}
	}
	wantFlowStatus(t, getFlow(t, s, id), how)
}

// testScheduleFlowBufferOne: with nothing running, the first due tick's flow runs and the
// second's is held (the rest skipped); ticks while one is held are skipped; the held
// flow starts in the transaction that ends the running one, however it ends; then a
// tick while the released flow runs is held again.
func testScheduleFlowBufferOne(t *testing.T, s store.Store) {
	for _, end := range []store.FlowStatus{store.FlowSucceeded, store.FlowFailed, store.FlowCanceled} {
		t.Run(string(end), func(t *testing.T) {
			name := "buf-" + string(end)
			mkFlowSchedule(t, s, name, func(p *store.ScheduleParams) {
				p.Overlap, p.CatchUp, p.Flow = store.OverlapBufferOne, store.CatchUpAll, overlapFlow(name)
			})
			first := lastMinute(2)
			c := claimFlowTick(t, s, name, first)
			if len(c.Flows) != 2 || c.SkippedTicks < 1 {
				t.Fatalf("first claim: %d flows, %d skipped; want 2 (one held) and the rest skipped", len(c.Flows), c.SkippedTicks)
			}
			running, held := c.Flows[0].ID, c.Flows[1].ID
			if k := getFlow(t, s, held).IdempotencyKey; k != store.ScheduleRunKey(name, first.Add(time.Minute)) {
				t.Fatalf("held flow key %q, want the second tick's", k)
			}
			wantStartedFlow(t, s, running)
			wantHeldFlow(t, s, held)
			before := wantFlowRuns(t, s, name, &running, &held).SkippedTicks

			// A tick while one waits: skipped, counted.
			c = claimFlowTick(t, s, name, lastMinute(0))
			if len(c.Flows) != 0 || c.SkippedTicks != 1 {
				t.Fatalf("while one is held: %d flows, %d skipped; want 0 and 1", len(c.Flows), c.SkippedTicks)
			}
			if sc := wantFlowRuns(t, s, name, &running, &held); sc.SkippedTicks != before+1 {
				t.Fatalf("skipped ticks %d, want %d", sc.SkippedTicks, before+1)
			}
			wantHeldFlow(t, s, held)

			// The running flow ends: the held one starts in the same transaction.
			endFlow(t, s, running, end)
			wantStartedFlow(t, s, held)
			wantFlowRuns(t, s, name, &held, nil)

			// A tick while the released flow runs and nothing waits: held again.
			c = claimFlowTick(t, s, name, lastMinute(0))
			if len(c.Flows) != 1 || c.SkippedTicks != 0 {
				t.Fatalf("while the released flow runs: %d flows, %d skipped; want 1 held", len(c.Flows), c.SkippedTicks)
			}
			next := c.Flows[0].ID
			wantHeldFlow(t, s, next)
			wantFlowRuns(t, s, name, &held, &next)
		})
	}
}

// testScheduleFlowBufferOneHeldCanceled: a held flow canceled while it waits no longer
// counts as waiting (the next tick is held in its place), and the running flow's end
// then starts the new one; deleting the schedule cancels a flow still held.
func testScheduleFlowBufferOneHeldCanceled(t *testing.T, s store.Store) {
	mkFlowSchedule(t, s, "buf", func(p *store.ScheduleParams) {
		p.Overlap, p.CatchUp, p.Flow = store.OverlapBufferOne, store.CatchUpAll, overlapFlow("buf")
	})
	c := claimFlowTick(t, s, "buf", lastMinute(2))
	running, held := c.Flows[0].ID, c.Flows[1].ID
	if _, err := s.CancelFlow(ctx(t), held); err != nil {
		t.Fatalf("CancelFlow(held): %v", err)
	}
	wantFlowStatus(t, getFlow(t, s, held), store.FlowCanceled)
	wantStartedFlow(t, s, running) // the running flow is not touched
	c = claimFlowTick(t, s, "buf", lastMinute(0))
	if len(c.Flows) != 1 {
		t.Fatalf("after the held flow was canceled: %d flows, want 1 held in its place", len(c.Flows))
	}
	next := c.Flows[0].ID
	wantHeldFlow(t, s, next)
	wantFlowRuns(t, s, "buf", &running, &next)
	endFlow(t, s, running, store.FlowSucceeded)
	wantStartedFlow(t, s, next)
	wantFlowStatus(t, getFlow(t, s, held), store.FlowCanceled) // still

	// Deleting the schedule cancels a flow still held, and nothing else.
	mkFlowSchedule(t, s, "gone", func(p *store.ScheduleParams) {
		p.Overlap, p.CatchUp, p.Flow = store.OverlapBufferOne, store.CatchUpAll, overlapFlow("gone")
	})
	c = claimFlowTick(t, s, "gone", lastMinute(2))
	running, held = c.Flows[0].ID, c.Flows[1].ID
	if err := s.DeleteSchedule(ctx(t), "gone"); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
	f := getFlow(t, s, held)
	wantFlowStatus(t, f, store.FlowCanceled)
	for _, st := range f.Steps {
		if st.Status != store.StepStatus(store.StatusCanceled) || len(st.TaskIDs) != 0 {
			t.Fatalf("held flow of a deleted schedule: step %q %s with %d tasks", st.Name, st.Status, len(st.TaskIDs))
		}
	}
	wantStartedFlow(t, s, running)
	// Its end starts nothing any more.
	endFlow(t, s, running, store.FlowSucceeded)
	wantFlowStatus(t, getFlow(t, s, held), store.FlowCanceled)
}

// testScheduleFlowCancelOther: a tick while the schedule's flow runs cancels it as
// CancelFlow does (its waiting steps and pending tasks CANCELED, its running task asked
// to cancel) and starts the new one, which becomes the current run; with several due
// ticks only the last runs.
func testScheduleFlowCancelOther(t *testing.T, s store.Store) {
	mkFlowSchedule(t, s, "co", func(p *store.ScheduleParams) {
		p.Overlap, p.CatchUp, p.Flow = store.OverlapCancelOther, store.CatchUpAll, overlapFlow("co")
	})
	// Three claims' worth of due ticks (MaxCatchUpRuns each), so that each claim's last
	// tick, the one that runs, is a tick of its own.
	first := lastMinute(3 * store.MaxCatchUpRuns)
	c := claimFlowTick(t, s, "co", first)
	if len(c.Flows) != 1 || c.SkippedTicks != store.MaxCatchUpRuns-1 {
		t.Fatalf("first claim: %d flows, %d skipped; want the last tick's flow alone", len(c.Flows), c.SkippedTicks)
	}
	old := c.Flows[0].ID
	if k := getFlow(t, s, old).IdempotencyKey; k != store.ScheduleRunKey("co", first.Add((store.MaxCatchUpRuns-1)*time.Minute)) {
		t.Fatalf("the flow's key %q, want the last tick's", k)
	}
	wantStartedFlow(t, s, old)
	a := claimID(t, s, stepTask(t, s, old, "a"), store.StatusPending, 30*time.Second) // running
	b := stepTask(t, s, old, "b")                                                     // pending

	c = claimOf(t, claimSchedules(t, s, 10), "co")
	if len(c.Flows) != 1 || c.SkippedTicks != store.MaxCatchUpRuns-1 {
		t.Fatalf("second claim: %d flows, %d skipped", len(c.Flows), c.SkippedTicks)
	}
	next := c.Flows[0].ID
	if next == old {
		t.Fatal("the second claim returned the old flow")
	}
	wantCanceledMidway(t, s, getFlow(t, s, old), a.ID, b.ID)
	wantStartedFlow(t, s, next)
	wantFlowRuns(t, s, "co", &next, nil)
	// The canceled flow's running task ends: nothing changes for the schedule.
	recordOK(t, s, outcome(a, store.Retry, "stopped"), store.StatusCanceled)
	wantFlowRuns(t, s, "co", &next, nil)
	wantStartedFlow(t, s, next)

	// Once the current flow ended, a tick cancels nothing.
	endFlow(t, s, next, store.FlowSucceeded)
	c = claimOf(t, claimSchedules(t, s, 10), "co")
	if len(c.Flows) != 1 {
		t.Fatalf("after the flow ended: %d flows, want 1", len(c.Flows))
	}
	wantFlowStatus(t, getFlow(t, s, next), store.FlowSucceeded)
	third := c.Flows[0].ID
	wantFlowRuns(t, s, "co", &third, nil)
}

// testScheduleFlowBufferOneRestore: moved back over ticks (a restore), a claim whose
// first tick's flow exists (it ended) starts nothing for it; the next tick, which
// buffer_one would hold behind it, then runs instead of waiting for a flow that does not
// run (nothing would ever release it).
func testScheduleFlowBufferOneRestore(t *testing.T, s store.Store) {
	mkFlowSchedule(t, s, "rst", func(p *store.ScheduleParams) {
		p.Overlap, p.CatchUp, p.Flow = store.OverlapBufferOne, store.CatchUpAll, overlapFlow("rst")
	})
	first := lastMinute(3)
	c := claimFlowTick(t, s, "rst", first)
	running, held := c.Flows[0].ID, c.Flows[1].ID
	// The held flow is canceled (its tick's key is free again), the running one ends.
	if _, err := s.CancelFlow(ctx(t), held); err != nil {
		t.Fatal(err)
	}
	endFlow(t, s, running, store.FlowSucceeded)
	// Back over the same ticks: the first has its flow, the second gets one, which runs.
	c = claimFlowTick(t, s, "rst", first)
	if len(c.Flows) != 1 {
		t.Fatalf("claim over restored ticks: %d flows, want 1", len(c.Flows))
	}
	again := c.Flows[0].ID
	if k := getFlow(t, s, again).IdempotencyKey; k != store.ScheduleRunKey("rst", first.Add(time.Minute)) {
		t.Fatalf("the new flow's key %q, want the second tick's", k)
	}
	wantStartedFlow(t, s, again)
	wantFlowRuns(t, s, "rst", &again, nil)
}
