package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store/postgres"
)

// TestFlowsCrashKill9 (issue 13's crash test): 200 fan-out flows a -> for_each(b over
// a's 10 elements) -> c and 50 diamonds a -> (b, c) -> d, worked by 3 `rota worker`
// processes of which one is SIGKILLed and restarted every ~300 ms. The transaction that
// ends a step's last dependency creates the step's tasks, so a worker dying before,
// during or after that commit neither loses a step nor starts one twice: every flow
// SUCCEEDED, every task once, each fan-in in element order (flowSet.check).
func TestFlowsCrashKill9(t *testing.T) {
	ctx := context.Background()
	dbURL, pool := newDB(t)
	st := postgres.New(pool)
	defer st.Close()
	flows := newFlowSet(t, 200, 50, func(f flowSpec) uuid.UUID {
		res, err := st.CreateFlow(ctx, f.params())
		if err != nil {
			t.Fatal(err)
		}
		return res.Flow.ID
	})

	workerArgs := func(i, gen int) []string {
		return []string{"worker", "--mode", "poll", "--database-url", dbURL,
			"--worker-id", fmt.Sprintf("w%d-gen%d", i, gen),
			"--concurrency", "8", "--lease", "2s", "--reap-interval", "250ms",
			"--poll-interval", "100ms", "--shutdown-grace", "2s", "--log-level", "warn"}
	}
	workers := make([]*proc, 3)
	gens := make([]int, len(workers))
	for i := range workers {
		workers[i] = startProc(t, fmt.Sprintf("worker%d", i), nil, workerArgs(i, 0)...)
	}
	kills := 0
	flows.wait(t, pool, 3*time.Minute, func() {
		time.Sleep(300 * time.Millisecond)
		i := kills % len(workers)
		workers[i].kill()
		kills++
		gens[i]++
		workers[i] = startProc(t, fmt.Sprintf("worker%d-gen%d", i, gens[i]), nil, workerArgs(i, gens[i])...)
	})
	for _, w := range workers {
		w.stop(t, 10*time.Second)
	}

	flows.check(t, pool)
	var reaped int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rota.task_attempts WHERE outcome = 'LEASE_EXPIRED'`).Scan(&reaped); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d flows (%d tasks) succeeded after %d SIGKILLs; %d attempts were reaped after their worker died",
		flows.size(), statusCounts(t, pool)["SUCCEEDED"], kills, reaped)
	if kills < 3 || reaped == 0 {
		t.Errorf("%d kills, %d reaped attempts: the test did not exercise crashes", kills, reaped)
	}
}
