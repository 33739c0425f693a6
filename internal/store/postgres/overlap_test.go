package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// The races between a schedule claim and the end of the schedule's current run
// (migration 0017). The claim locks the schedule's row and reads its current run from
// it; the trigger on the run's end updates that row. Whichever commits second must see
// the other, or a buffered run would stay held for ever.

// overlapSchedule creates a yearly schedule with the policy and fires its first tick,
// returning the run (claimed: PROCESSING) and a function that fires the next tick.
func overlapSchedule(t *testing.T, st *postgres.Store, name string, overlap store.Overlap) (*store.Task, func() time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: name, CronSpec: "0 0 1 1 *", Overlap: overlap,
		Task: store.TaskTemplate{Kind: "noop", Queue: name}}); err != nil {
		t.Fatal(err)
	}
	next := tickMover(t, st, name)
	next()
	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 1 || len(claims[0].Runs) != 1 {
		t.Fatalf("first tick: %+v, %v", claims, err)
	}
	run := mustClaim(t, st, store.ClaimParams{Queue: name, TaskIDs: []uuid.UUID{claims[0].Runs[0].ID}})[0]
	return run, next
}

// TestRunEndWaitsForTheClaimThatBuffers: the claim that buffers a run holds the
// schedule's row when the current run ends; the trigger waits for it, then releases the
// buffered run.
func TestRunEndWaitsForTheClaimThatBuffers(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	running, next := overlapSchedule(t, st, "buf", store.OverlapBufferOne)
	next()
	steps := postgres.ClaimSchedulesSteps(10)
	// Locks the schedule and buffers a run, uncommitted.
	tx, holder := beginHolding(t, pool, steps[0])
	if _, err := tx.Exec(ctx, steps[1]); err != nil {
		t.Fatal(err)
	}

	succeedBehind(t, st, pool, tx, holder, running)
	sc, err := st.GetSchedule(ctx, "buf")
	if err != nil || sc.CurrentRunID == nil || sc.WaitingRunID != nil {
		t.Fatalf("schedule after the run ended: %+v, %v; want the buffered run current, none waiting", sc, err)
	}
	if got := mustGet(t, st, *sc.CurrentRunID); got.Status != store.StatusPending || got.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatalf("the buffered run is %s at %s, want due", got.Status, got.ScheduledFor)
	}
}

// TestClaimSkipsAScheduleWhoseRunIsEnding: a run ending in an open transaction holds the
// schedule's row (its trigger cleared the current run); a claim meanwhile skips the
// schedule (SKIP LOCKED) and leaves it due, and the next claim sees the run ended: the
// new run is due at once, not held.
func TestClaimSkipsAScheduleWhoseRunIsEnding(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	running, next := overlapSchedule(t, st, "buf", store.OverlapBufferOne)
	next()
	tx, _ := beginHolding(t, pool, `UPDATE rota.tasks SET status = 'SUCCEEDED', completed_at = now(), lease_token = NULL,
		lease_expires_at = NULL WHERE id = $1`, running.ID)
	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 0 {
		t.Fatalf("claim while the run ends: %+v, %v; want the schedule skipped", claims, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	claims, err = st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 1 || len(claims[0].Runs) != 1 {
		t.Fatalf("claim after the run ended: %+v, %v", claims, err)
	}
	if r := claims[0].Runs[0]; r.ScheduledFor.Equal(store.HeldRunAt) {
		t.Fatal("the run after the current one ended was held")
	}
}

// TestCancelOtherLeavesALockedRunForLater: cancel_other never waits for a run's row lock
// while it holds the schedule's (the run's outcome, waiting for the schedule's row in its
// trigger, would deadlock with it): a run locked by another transaction (here a
// heartbeat) leaves the schedule due and untouched until the lock is gone.
func TestCancelOtherLeavesALockedRunForLater(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	running, next := overlapSchedule(t, st, "co", store.OverlapCancelOther)
	at := next()
	tx, _ := beginHolding(t, pool, querySQL(t, "heartbeat.sql"), running.ID, running.LeaseToken, time.Minute)
	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 0 {
		t.Fatalf("claim while the run is locked: %+v, %v; want none", claims, err)
	}
	if sc, _ := st.GetSchedule(ctx, "co"); !sc.NextRunAt.Equal(at) || *sc.CurrentRunID != running.ID {
		t.Fatalf("the schedule moved: next %s current %v", sc.NextRunAt, sc.CurrentRunID)
	}
	if got := mustGet(t, st, running.ID); got.CancelRequestedAt != nil {
		t.Fatal("the locked run got a cancel request")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	claims, err = st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 1 || len(claims[0].Runs) != 1 {
		t.Fatalf("claim after the lock: %+v, %v", claims, err)
	}
	if got := mustGet(t, st, running.ID); got.CancelRequestedAt == nil || got.Status != store.StatusProcessing {
		t.Fatalf("the previous run: %s, cancel requested %v; want a cancel request", got.Status, got.CancelRequestedAt)
	}
}

// TestOverlapClaimsAndOutcomesRace: ticks claimed and runs finished as fast as possible
// from several goroutines, for buffer_one and cancel_other: no error (no deadlock), and
// once everything settles no run is left held and no schedule names a current run that
// ended.
func TestOverlapClaimsAndOutcomesRace(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	policies := []store.Overlap{store.OverlapBufferOne, store.OverlapCancelOther, store.OverlapSkip}
	base := time.Now().UTC().Truncate(time.Second).Add(-2 * time.Hour)
	for _, o := range policies {
		if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: string(o), CronSpec: "0 0 1 1 *", Overlap: o,
			Task: store.TaskTemplate{Kind: "noop", Queue: "race"}}); err != nil {
			t.Fatal(err)
		}
	}
	raceTicksAndOutcomes(t, st, policies, base, 150)
	// Settle: finish what is left; released runs come due as their predecessors end.
	eventually(t, 30*time.Second, "every run to finish", func() bool {
		if err := finishSome(ctx, st, "settle"); err != nil {
			t.Fatal(err)
		}
		var live int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.tasks WHERE status IN ('PENDING', 'ENQUEUED', 'PROCESSING')`).Scan(&live); err != nil {
			t.Fatal(err)
		}
		return live == 0
	})
	for _, o := range policies {
		sc, err := st.GetSchedule(ctx, string(o))
		if err != nil || sc.CurrentRunID != nil || sc.WaitingRunID != nil {
			t.Errorf("%s after everything finished: current %v waiting %v (%v)", o, sc.CurrentRunID, sc.WaitingRunID, err)
		}
		t.Logf("%s: %d ticks skipped", o, sc.SkippedTicks)
	}
}

// finishSome claims due runs of the race queue and succeeds them (a canceled run's
// outcome is recorded as its cancel).
func finishSome(ctx context.Context, st *postgres.Store, worker string) error {
	tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "race", From: store.StatusPending, WorkerID: worker,
		Limit: 5, LeaseDuration: time.Minute})
	if err != nil {
		return fmt.Errorf("claim tasks: %w", err)
	}
	var outcomes []store.Outcome
	for _, task := range tasks {
		outcomes = append(outcomes, store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Succeed})
	}
	if len(outcomes) == 0 {
		return nil
	}
	res, err := st.RecordOutcomes(ctx, outcomes)
	if err != nil {
		return fmt.Errorf("record outcomes: %w", err)
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, store.ErrLeaseLost) {
			return r.Err
		}
	}
	return nil
}

// raceTicksAndOutcomes claims ticks of the schedules named by policies (one a second
// from base, as fast as it can) while three workers finish whatever runs (finishSome),
// until the ticks are done; it fails t on any error (a deadlock, say).
func raceTicksAndOutcomes(t *testing.T, st *postgres.Store, policies []store.Overlap, base time.Time, ticks int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	stop := make(chan struct{})
	wg.Go(func() { // the ticks, every schedule at each
		defer close(stop)
		for i := range ticks {
			for _, o := range policies {
				if _, err := st.RescheduleSchedule(ctx, string(o), base.Add(time.Duration(i)*time.Second)); err != nil {
					errs <- err
					return
				}
			}
			if _, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10}); err != nil {
				errs <- fmt.Errorf("claim: %w", err)
				return
			}
		}
	})
	for w := range 3 { // workers finishing runs at once
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := finishSome(ctx, st, fmt.Sprintf("w%d", w)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// tickMover returns a function that makes schedule name due at its next tick (one a
// second, from an hour ago) and returns that tick.
func tickMover(t *testing.T, st *postgres.Store, name string) func() time.Time {
	t.Helper()
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	n := 0
	return func() time.Time {
		n++
		at := base.Add(time.Duration(n) * time.Second)
		if _, err := st.RescheduleSchedule(context.Background(), name, at); err != nil {
			t.Fatal(err)
		}
		return at
	}
}
