package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// The races of overlap buffer_one and cancel_other for schedules of kind flow (migration
// 0029) with the end of the schedule's running flow: the flow's outcome reaches the
// schedule's row through the trigger flows_schedule_run_ended (after the flow's task and
// row), while a claim holds the schedule's row first; the claim must never wait for the
// flow's locks, and whichever commits second must see the other.

// flowOverlapSchedule creates a yearly flow schedule (steps a -> b in queue name) with
// the policy and fires its first tick: it returns the flow, its step a's task claimed
// (PROCESSING), and a function that makes the next tick due.
func flowOverlapSchedule(t *testing.T, st *postgres.Store, name string, overlap store.Overlap) (uuid.UUID, *store.Task, func() time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: name, Kind: store.ScheduleKindFlow, CronSpec: "0 0 1 1 *",
		Overlap: overlap, Flow: &store.FlowParams{Name: name, Queue: name, Steps: []store.StepParams{
			{Name: "a", Kind: "a"}, {Name: "b", Kind: "b", DependsOn: []string{"a"}}}}}); err != nil {
		t.Fatal(err)
	}
	next := tickMover(t, st, name)
	next()
	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 1 || len(claims[0].Flows) != 1 {
		t.Fatalf("first tick: %+v, %v", claims, err)
	}
	flow := claims[0].Flows[0]
	a := mustClaim(t, st, store.ClaimParams{Queue: name, TaskIDs: []uuid.UUID{flow.Steps[0].TaskIDs[0]}})[0]
	return flow.ID, a, next
}

func mustGetFlow(t *testing.T, st *postgres.Store, id uuid.UUID) *store.Flow {
	t.Helper()
	f, err := st.GetFlow(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFlowEndWaitsForTheClaimThatBuffers: a claim holds the schedule's row and has
// created the held flow (uncommitted) when the running flow's last step succeeds; the
// outcome's trigger waits for the claim, then starts the held flow.
func TestFlowEndWaitsForTheClaimThatBuffers(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	running, a, next := flowOverlapSchedule(t, st, "buf", store.OverlapBufferOne)
	mustRecord(t, st, a, store.Succeed)
	b := mustClaim(t, st, store.ClaimParams{Queue: "buf", TaskIDs: []uuid.UUID{stepTaskID(t, st, running, "b")}})[0]
	next()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	claims, err := postgres.ClaimSchedulesInTx(ctx, tx, 10)
	if err != nil || len(claims) != 1 || len(claims[0].Flows) != 1 {
		t.Fatalf("claim in a transaction: %+v, %v", claims, err)
	}
	held := claims[0].Flows[0].ID
	holder := tx.Conn().PgConn().PID()

	succeedBehind(t, st, pool, tx, holder, b)
	if f := mustGetFlow(t, st, running); f.Status != store.FlowSucceeded {
		t.Fatalf("the running flow is %s, want SUCCEEDED", f.Status)
	}
	sc, err := st.GetSchedule(ctx, "buf")
	if err != nil || sc.CurrentRunID == nil || *sc.CurrentRunID != held || sc.WaitingRunID != nil {
		t.Fatalf("schedule after the flow ended: %+v, %v; want the held flow %s current, none waiting", sc, err, held)
	}
	f := mustGetFlow(t, st, held)
	if f.Status != store.FlowRunning || len(f.Steps[0].TaskIDs) != 1 || f.Steps[0].TaskStatuses[0] != store.StatusPending {
		t.Fatalf("the held flow after the release: %s, step a %+v; want RUNNING with a PENDING task", f.Status, f.Steps[0])
	}
}

// TestCancelOtherLeavesALockedFlowForLater: cancel_other never waits for a lock of the
// running flow while it holds the schedule's row (the flow's outcome, waiting for the
// schedule's row in the trigger, would deadlock with it): a live task of the flow or the
// flow's row locked by another transaction leaves the schedule due and untouched until
// the lock is gone; then the claim cancels the flow and starts the next.
func TestCancelOtherLeavesALockedFlowForLater(t *testing.T) {
	t.Parallel()
	for _, lock := range []string{"task", "flow"} {
		t.Run(lock, func(t *testing.T) {
			t.Parallel()
			st, pool := newStore(t)
			ctx := context.Background()
			running, a, next := flowOverlapSchedule(t, st, "co", store.OverlapCancelOther)
			at := next()
			sql, arg := querySQL(t, "heartbeat.sql"), []any{a.ID, a.LeaseToken, time.Minute}
			if lock == "flow" {
				sql, arg = `SELECT FROM rota.flows WHERE id = $1 FOR UPDATE`, []any{running}
			}
			tx, _ := beginHolding(t, pool, sql, arg...)
			claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
			if err != nil || len(claims) != 0 {
				t.Fatalf("claim while the flow is locked: %+v, %v; want none", claims, err)
			}
			if sc, _ := st.GetSchedule(ctx, "co"); !sc.NextRunAt.Equal(at) || *sc.CurrentRunID != running {
				t.Fatalf("the schedule moved: next %s current %v", sc.NextRunAt, sc.CurrentRunID)
			}
			if f := mustGetFlow(t, st, running); f.Status != store.FlowRunning {
				t.Fatalf("the locked flow is %s", f.Status)
			}
			if got := mustGet(t, st, a.ID); got.CancelRequestedAt != nil {
				t.Fatal("the locked flow's task got a cancel request")
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			claims, err = st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
			if err != nil || len(claims) != 1 || len(claims[0].Flows) != 1 {
				t.Fatalf("claim after the lock: %+v, %v", claims, err)
			}
			if f := mustGetFlow(t, st, running); f.Status != store.FlowCanceled {
				t.Fatalf("the previous flow is %s, want CANCELED", f.Status)
			}
			if got := mustGet(t, st, a.ID); got.CancelRequestedAt == nil || got.Status != store.StatusProcessing {
				t.Fatalf("the previous flow's running task: %s, cancel requested %v", got.Status, got.CancelRequestedAt)
			}
			if sc, _ := st.GetSchedule(ctx, "co"); *sc.CurrentRunID != claims[0].Flows[0].ID {
				t.Fatalf("current run %v, want the new flow", sc.CurrentRunID)
			}
		})
	}
}

// TestFlowOverlapClaimsAndOutcomesRace: ticks of flow schedules (buffer_one,
// cancel_other, skip) claimed while workers finish their step tasks as fast as they can,
// from several goroutines: no error (no deadlock), and once everything settles no flow
// runs or is held, no schedule names a current or waiting flow that runs, and under
// buffer_one no flow started before the one before it ended.
func TestFlowOverlapClaimsAndOutcomesRace(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	policies := []store.Overlap{store.OverlapBufferOne, store.OverlapCancelOther, store.OverlapSkip}
	base := time.Now().UTC().Truncate(time.Second).Add(-2 * time.Hour)
	for _, o := range policies {
		if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: string(o), Kind: store.ScheduleKindFlow, CronSpec: "0 0 1 1 *",
			Overlap: o, Flow: &store.FlowParams{Name: string(o), Queue: "race", Steps: []store.StepParams{
				{Name: "a", Kind: "a"}, {Name: "b", Kind: "b"}, {Name: "c", Kind: "c", DependsOn: []string{"a", "b"}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	stopWatch := watchStartedFlows(t, pool, string(store.OverlapBufferOne))
	raceTicksAndOutcomes(t, st, policies, base, 120)
	stopWatch()
	eventually(t, 60*time.Second, "every flow to end", func() bool {
		if err := finishSome(ctx, st, "settle"); err != nil {
			t.Fatal(err)
		}
		var running int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.flows WHERE status = 'RUNNING'`).Scan(&running); err != nil {
			t.Fatal(err)
		}
		return running == 0
	})
	for _, o := range policies {
		sc, err := st.GetSchedule(ctx, string(o))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []*uuid.UUID{sc.CurrentRunID, sc.WaitingRunID} {
			if id != nil && mustGetFlow(t, st, *id).Status == store.FlowRunning {
				t.Errorf("%s names a running flow %s after everything ended", o, *id)
			}
		}
		var flows int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.flows WHERE name = $1`, string(o)).Scan(&flows); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d flows, %d ticks skipped", o, flows, sc.SkippedTicks)
		if flows == 0 {
			t.Errorf("%s started no flow", o)
		}
	}
	checkFlowsNeverOverlapped(t, pool, string(store.OverlapBufferOne))
}

// watchStartedFlows samples, until the returned function is called, how many flows of the
// named schedule are RUNNING with a task (started, not held) in one snapshot each time,
// and fails the test if it ever sees two. A snapshot is the only sound witness: the
// flows' own times are their transactions' starts, and a claim that began before the
// outcome ending the flow before it, and waited for that outcome's commit, starts its
// flow with the earlier time without any overlap.
func watchStartedFlows(t *testing.T, pool *pgxpool.Pool, name string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			var running int
			if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM rota.flows f
				WHERE f.name = $1 AND f.status = 'RUNNING'
				  AND EXISTS (SELECT FROM rota.tasks t WHERE t.flow_id = f.id)`, name).Scan(&running); err != nil {
				t.Error(err)
				return
			}
			if running > 1 {
				t.Errorf("%s: %d flows started and running at once", name, running)
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// checkFlowsNeverOverlapped: every flow of the named schedule ran (none left held
// without a task), and no flow started (its first task created) after its successor in
// tick order had ended: a start may precede the end of the flow before it by the time
// its claim waited for that end's commit (watchStartedFlows says why), never follow
// the next one's end.
func checkFlowsNeverOverlapped(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT f.idempotency_key, f.status, f.completed_at,
			(SELECT min(t.created_at) FROM rota.tasks t WHERE t.flow_id = f.id)
		FROM rota.flows f WHERE f.name = $1
		ORDER BY split_part(f.idempotency_key, ':', 3)::bigint`, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prevStart *time.Time
	var prevKey string
	for rows.Next() {
		var key, status string
		var end, start *time.Time
		if err := rows.Scan(&key, &status, &end, &start); err != nil {
			t.Fatal(err)
		}
		if start == nil {
			t.Errorf("%s: flow %s (%s) never started a task", name, key, status)
			continue
		}
		if prevStart != nil && end != nil && !prevStart.Before(*end) {
			t.Errorf("%s: flow %s started at %s, after flow %s (the next tick's) ended at %s", name, prevKey, prevStart, key, end)
		}
		prevStart, prevKey = start, key
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// stepTaskID is the one task of a single-task step of flow id.
func stepTaskID(t *testing.T, st *postgres.Store, id uuid.UUID, step string) uuid.UUID {
	t.Helper()
	return stepTaskIDs(t, mustGetFlow(t, st, id), step, 1)[0]
}

// mustRecord records one outcome of a claimed task.
func mustRecord(t *testing.T, st *postgres.Store, task *store.Task, kind store.OutcomeKind) {
	t.Helper()
	res, err := st.RecordOutcomes(context.Background(), []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: kind}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("RecordOutcomes: %v, %+v", err, res)
	}
}

// TestFlowOverlapMigrationDown: reverting migration 0029 starts the flows still held (no
// trigger would start them any more) and turns the flow schedules' buffer_one and
// cancel_other into skip (the constraint of 0021 comes back).
func TestFlowOverlapMigrationDown(t *testing.T) {
	t.Parallel()
	st, pool := newStore(t)
	ctx := context.Background()
	_, _, next := flowOverlapSchedule(t, st, "buf", store.OverlapBufferOne)
	next()
	claims, err := st.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: 10})
	if err != nil || len(claims) != 1 || len(claims[0].Flows) != 1 {
		t.Fatalf("held tick: %+v, %v", claims, err)
	}
	held := claims[0].Flows[0].ID
	if f := mustGetFlow(t, st, held); len(f.Steps[0].TaskIDs) != 0 {
		t.Fatalf("the held flow has tasks: %+v", f.Steps[0])
	}
	migs, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	steps := 0 // 0029 and any migration after it
	for _, m := range migs {
		if m.Version >= 29 {
			steps++
		}
	}
	reverted, err := postgres.MigrateDown(ctx, pool, steps)
	if err != nil || len(reverted) != steps || reverted[len(reverted)-1] != 29 {
		t.Fatalf("down: %v, %v; want 29 reverted last", reverted, err)
	}
	if f := mustGetFlow(t, st, held); f.Status != store.FlowRunning || len(f.Steps[0].TaskIDs) != 1 {
		t.Fatalf("the held flow after the down migration: %s, step a %+v; want started", f.Status, f.Steps[0])
	}
	var overlap string
	var waiting *uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT overlap, waiting_run_id FROM rota.schedules WHERE name = 'buf'`).Scan(&overlap, &waiting); err != nil ||
		overlap != "skip" || waiting != nil {
		t.Fatalf("schedule after the down migration: overlap %q waiting %v (%v)", overlap, waiting, err)
	}
}
