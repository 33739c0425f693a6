package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/proccpu"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// BenchmarkFlowStepsVsPlainTasks is the store's share of a step's cost against a plain
// task's: one iteration runs 1,000 plain tasks (created in batches of 100, as an
// enqueuer would) and 1,000 steps (100 ten-step linear flows, whose outcome
// transactions create the next steps' tasks), both claimed by one claimer in batches of
// up to 100 whose outcomes (with a small output) go in one RecordOutcomes call each; the
// two alternate which runs first. Timed: for plain tasks their creation and their
// drain, for steps their drain (which creates every step's task but the first: creating
// the flows is not timed). Reported: plain tasks/s, steps/s and step/plain-cost, and
// db-cpu-step/plain: the CPU time the database backend itself spent (its
// /proc/<pid>/stat, one connection) per step against per plain task, which the other
// engineers' load on a shared machine changes far less than wall time (0 when the
// server's processes are not visible).
//
//	go test -run '^$' -bench FlowStepsVsPlainTasks -benchtime 5x ./internal/store/postgres/
func BenchmarkFlowStepsVsPlainTasks(b *testing.B) {
	const flows, stepsPerFlow = 100, 10
	const n = flows * stepsPerFlow
	ctx := context.Background()
	pool := pgtest.NewPoolConns(b, 1)
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	dbCPU := backendCPU(b, pool)
	linear := make([]store.StepParams, stepsPerFlow)
	for i := range linear {
		linear[i] = store.StepParams{Name: fmt.Sprint("s", i), Kind: "step"}
		if i > 0 {
			linear[i].DependsOn = []string{fmt.Sprint("s", i-1)}
		}
	}
	drain := func(queue string, want int) time.Duration {
		start := time.Now()
		done := 0
		for done < want {
			tasks, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: queue, From: store.StatusPending, WorkerID: "bench", Limit: 100, LeaseDuration: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if len(tasks) == 0 {
				b.Fatalf("%s: nothing to claim after %d of %d", queue, done, want)
			}
			outs := make([]store.Outcome, len(tasks))
			for i, t := range tasks {
				outs[i] = store.Outcome{TaskID: t.ID, LeaseToken: t.LeaseToken, Kind: store.Succeed, Output: json.RawMessage(`{"ok": true}`)}
			}
			if _, err := st.RecordOutcomes(ctx, outs); err != nil {
				b.Fatal(err)
			}
			done += len(tasks)
		}
		return time.Since(start)
	}
	var plainTime, flowTime, plainCPU, flowCPU time.Duration
	round := 0
	for b.Loop() {
		round++
		b.StopTimer()
		plainQ, flowQ := fmt.Sprint("plain", round), fmt.Sprint("flow", round)
		for range flows {
			if _, err := st.CreateFlow(ctx, store.FlowParams{Queue: flowQ, Steps: linear}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		plain := func() time.Duration {
			start := time.Now()
			for range n / 100 {
				params := make([]store.CreateParams, 100)
				for i := range params {
					params[i] = store.CreateParams{Queue: plainQ, Kind: "step"}
				}
				if _, err := st.CreateTasks(ctx, params); err != nil {
					b.Fatal(err)
				}
			}
			return time.Since(start) + drain(plainQ, n)
		}
		runPlain := func() {
			c := dbCPU()
			plainTime += plain()
			plainCPU += dbCPU() - c
		}
		runFlows := func() {
			c := dbCPU()
			flowTime += drain(flowQ, n)
			flowCPU += dbCPU() - c
		}
		if round%2 == 0 { // alternate which goes first
			runPlain()
			runFlows()
		} else {
			runFlows()
			runPlain()
		}
	}
	b.ReportMetric(float64(n*round)/plainTime.Seconds(), "plain-tasks/s")
	b.ReportMetric(float64(n*round)/flowTime.Seconds(), "steps/s")
	b.ReportMetric(flowTime.Seconds()/plainTime.Seconds(), "step/plain-cost")
	if plainCPU > 0 {
		b.ReportMetric(flowCPU.Seconds()/plainCPU.Seconds(), "db-cpu-step/plain")
	}
}

// backendCPU returns a reader of the CPU time (user + system) the one backend of pool
// has used so far, from /proc/<pid>/stat (clock ticks of 10 ms: measure seconds of
// work); it reads 0 when the server runs where /proc does not show it.
func backendCPU(b *testing.B, pool *pgxpool.Pool) func() time.Duration {
	var pid int
	if err := pool.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	return func() time.Duration {
		cpu, _ := proccpu.Pid(pid)
		return cpu
	}
}
