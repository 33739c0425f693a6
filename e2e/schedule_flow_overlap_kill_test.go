package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestFlowScheduleOverlapKill9 is the crash test of a buffer_one schedule of kind flow:
// the schedule of TestFlowScheduleOverlapTwoServers (sleep 2.5 s -> sleep 0.1 s, a tick
// every second) while the worker is SIGKILLed and restarted twice and one of the two
// servers claiming the schedule is SIGKILLed and restarted once. A step whose worker died
// is reaped and run again, and the flow it belongs to is still the one running: at the
// end one flow per tick not skipped, every flow SUCCEEDED, no flow started before the one
// before it ended, and no task succeeded twice.
func TestFlowScheduleOverlapKill9(t *testing.T) {
	ctx := context.Background()
	dbURL, pool := newDB(t)
	serveArgs := []string{"serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--token", apiToken,
		"--schedule-interval", "50ms", "--log-level", "warn"}
	api := apiClient{t: t, url: startServer(t, "serve-a", serveArgs...), token: apiToken}
	startB := func(gen int) *proc {
		return startProc(t, fmt.Sprintf("serve-b-gen%d", gen), []string{"ROTA_API_TOKEN=", "ROTA_ADDR="}, serveArgs...)
	}
	const name = "fov-kill"
	startWorker := func(gen int) *proc {
		return startProc(t, fmt.Sprintf("worker-gen%d", gen), nil, "worker", "--database-url", dbURL,
			"--queues", name, "--worker-id", fmt.Sprintf("worker-gen%d", gen), "--lease", "2s",
			"--reap-interval", "250ms", "--poll-interval", "100ms", "--log-level", "warn")
	}
	serveB, worker := startB(0), startWorker(0)
	api.call("POST", "/api/schedules", overlapFlowSchedule(name, "buffer_one")).expect(t, "create flow schedule", 201, "")

	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	tick := time.NewTicker(time.Second)
	for i := range overlapTicks {
		at := base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		api.call("POST", "/api/schedules/"+name+"/reschedule", map[string]any{"next_run_at": at}).expect(t, "reschedule", 200, "")
		<-tick.C
		switch i {
		case 2, 5: // a running step's worker dies
			worker.kill()
			worker = startWorker(i)
		case 4: // a server that claims the schedule dies
			serveB.kill()
			serveB = startB(i)
		}
	}
	tick.Stop()
	waitForFlowsToEnd(t, pool, 2*time.Minute)
	worker.stop(t, 10*time.Second)
	serveB.stop(t, 10*time.Second)

	flows := flowOverlapHistory(t, pool, name)
	sc := api.call("GET", "/api/schedules/"+name, nil).expect(t, "get schedule", 200, "")
	skipped := int(sc.body["skipped_ticks"].(float64))
	if len(flows)+skipped != overlapTicks {
		t.Errorf("%d flows + %d skipped ticks, want the %d ticks", len(flows), skipped, overlapTicks)
	}
	for i, f := range flows {
		if i > 0 && f.key == flows[i-1].key {
			t.Errorf("two flows for tick %s", f.key)
		}
	}
	checkBufferedFlows(t, flows, skipped)
	var twice, reaped int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM (SELECT task_id FROM rota.task_attempts WHERE outcome = 'SUCCEEDED'
			                       GROUP BY task_id HAVING count(*) > 1) d),
			(SELECT count(*) FROM rota.task_attempts WHERE outcome = 'LEASE_EXPIRED')`).Scan(&twice, &reaped); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d flows, %d skipped ticks, %d attempts reaped after their worker died", len(flows), skipped, reaped)
	if twice != 0 {
		t.Errorf("%d tasks succeeded more than once", twice)
	}
	if reaped == 0 {
		t.Error("no attempt was reaped: the kills hit no running step, so the test exercised no crash")
	}
}
