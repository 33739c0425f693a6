package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestFlowScheduleOverlapTwoServers: overlap buffer_one and cancel_other for schedules of
// kind flow (migration 0029), with two `rota serve` processes claiming the schedules and
// a real `rota worker` running the steps. Each flow is sleep (2.5 s) -> sleep (0.1 s), a
// tick comes every second (moved through the API, alternately through either server, as
// in TestScheduleOverlapPoliciesWithRealRuns). At the end: one flow per tick key at most
// and a flow per tick not skipped (no duplicates, none lost); under buffer_one the flows
// never overlapped, and a released flow's first tasks were created in the transaction
// that ended the flow before it; under cancel_other every flow but the last was canceled
// by the claim that started the next (same transaction), its running step asked to stop.
func TestFlowScheduleOverlapTwoServers(t *testing.T) {
	dbURL, pool := newDB(t)
	args := func() []string {
		return []string{"serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--token", apiToken,
			"--schedule-interval", "50ms", "--log-level", "warn"}
	}
	servers := []apiClient{
		{t: t, url: startServer(t, "serve-a", args()...), token: apiToken},
		{t: t, url: startServer(t, "serve-b", args()...), token: apiToken},
	}
	policies := []string{"buffer_one", "cancel_other"}
	name := func(p string) string { return "fov-" + strings.ReplaceAll(p, "_", "-") }
	var queues []string
	for _, p := range policies {
		queues = append(queues, name(p))
	}
	startProc(t, "worker", nil, "worker", "--database-url", dbURL, "--queues", strings.Join(queues, ","),
		"--poll-interval", "100ms", "--log-level", "warn")
	for _, p := range policies {
		servers[0].call("POST", "/api/schedules", overlapFlowSchedule(name(p), p)).expect(t, "create flow schedule "+p, 201, "")
	}

	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	tick := time.NewTicker(time.Second)
	for i := range overlapTicks {
		c := servers[i%2]
		for _, p := range policies {
			at := base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
			c.call("POST", "/api/schedules/"+name(p)+"/reschedule", map[string]any{"next_run_at": at}).expect(t, "reschedule", 200, "")
		}
		<-tick.C
	}
	tick.Stop()
	waitForFlowsToEnd(t, pool, 90*time.Second)
	for _, p := range policies {
		t.Run(p, func(t *testing.T) {
			c := servers[0]
			c.t = t
			flows := flowOverlapHistory(t, pool, name(p))
			sc := c.call("GET", "/api/schedules/"+name(p), nil).expect(t, "get schedule", 200, "")
			skipped := int(sc.body["skipped_ticks"].(float64))
			t.Logf("%s: %d flows, %d skipped ticks", p, len(flows), skipped)
			if len(flows)+skipped != overlapTicks {
				t.Errorf("%d flows + %d skipped ticks, want the %d ticks", len(flows), skipped, overlapTicks)
			}
			for i, f := range flows {
				if i > 0 && f.key == flows[i-1].key {
					t.Errorf("two flows for tick %s", f.key)
				}
			}
			switch p {
			case "buffer_one":
				checkBufferedFlows(t, flows, skipped)
			case "cancel_other":
				checkCanceledFlows(t, pool, flows)
			}
		})
	}
}

// overlapFlowSchedule is the body that creates schedule name of kind flow, overlap
// policy, whose flow (named name, in queue name) is sleep (overlapRunFor) -> sleep (0.1
// s), due only when the test moves it (its cron comes once a year).
func overlapFlowSchedule(name, policy string) map[string]any {
	return map[string]any{"name": name, "cron_spec": "0 0 1 1 *", "overlap": policy,
		"flow": map[string]any{"name": name, "queue": name, "steps": []any{
			map[string]any{"name": "long", "kind": "sleep", "payload": map[string]any{"ms": overlapRunFor.Milliseconds()}},
			map[string]any{"name": "short", "kind": "sleep", "payload": map[string]any{"ms": 100}, "depends_on": []string{"long"}},
		}}}
}

// waitForFlowsToEnd waits until no schedule is due, no flow runs and no task is live.
func waitForFlowsToEnd(t *testing.T, pool *pgxpool.Pool, d time.Duration) {
	t.Helper()
	waitFor(t, d, "every flow to end", func() (bool, string) {
		var due, running, live int
		if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM rota.schedules WHERE next_run_at <= now()),
		                                     (SELECT count(*) FROM rota.flows WHERE status = 'RUNNING'),
		                                     (SELECT count(*) FROM rota.tasks WHERE status IN ('PENDING', 'ENQUEUED', 'PROCESSING'))`).
			Scan(&due, &running, &live); err != nil {
			t.Fatal(err)
		}
		return due == 0 && running == 0 && live == 0, fmt.Sprintf("%d schedules due, %d flows running, %d tasks live", due, running, live)
	})
}

// flowRun is one flow a schedule started, as the database has it at the end.
type flowRun struct {
	id, key, status        string
	createdAt, completedAt time.Time
	firstTask              *time.Time // the creation of its first task (nil: it never started)
}

// flowOverlapHistory is the flows named name, in tick order.
func flowOverlapHistory(t *testing.T, pool *pgxpool.Pool, name string) []flowRun {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT f.id::text, f.idempotency_key, f.status, f.created_at, f.completed_at,
			(SELECT min(t.created_at) FROM rota.tasks t WHERE t.flow_id = f.id)
		FROM rota.flows f WHERE f.name = $1
		ORDER BY split_part(f.idempotency_key, ':', 3)::bigint, f.id`, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []flowRun
	for rows.Next() {
		var f flowRun
		if err := rows.Scan(&f.id, &f.key, &f.status, &f.createdAt, &f.completedAt, &f.firstTask); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkBufferedFlows: every flow succeeded, none started before the one before it ended,
// and flows were held: some started (its first task) in the transaction that ended the
// flow before it (same database time), after being created earlier.
func checkBufferedFlows(t *testing.T, flows []flowRun, skipped int) {
	t.Helper()
	if len(flows) < 2 || skipped == 0 {
		t.Errorf("%d flows, %d skipped; want several flows and skipped ticks", len(flows), skipped)
	}
	released := 0
	for i, f := range flows {
		if f.status != "SUCCEEDED" || f.firstTask == nil {
			t.Errorf("flow %s is %s (first task %v), want SUCCEEDED", f.key, f.status, f.firstTask)
			continue
		}
		if i == 0 {
			continue
		}
		prev := flows[i-1]
		if f.firstTask.Before(prev.completedAt) {
			t.Errorf("flow %s started at %s, before flow %s ended at %s", f.key, f.firstTask, prev.key, prev.completedAt)
		}
		if f.firstTask.Equal(prev.completedAt) && f.createdAt.Before(*f.firstTask) {
			released++
		}
	}
	if released == 0 {
		t.Error("no held flow was started by the end of the flow before it")
	}
}

// checkCanceledFlows: the last flow succeeded; every other was CANCELED in the
// transaction of the claim that started the next (its completed_at is the next flow's
// created_at), and its long step, running by then or not, never ran its full time.
func checkCanceledFlows(t *testing.T, pool *pgxpool.Pool, flows []flowRun) {
	t.Helper()
	if len(flows) < 2 {
		t.Fatalf("%d flows, want one per tick", len(flows))
	}
	for i, f := range flows[:len(flows)-1] {
		next := flows[i+1]
		if f.status != "CANCELED" {
			t.Errorf("flow %s is %s, want CANCELED by flow %s", f.key, f.status, next.key)
			continue
		}
		if !f.completedAt.Equal(next.createdAt) {
			t.Errorf("flow %s canceled at %s, flow %s created at %s: want one transaction", f.key, f.completedAt, next.key, next.createdAt)
		}
		var status string
		var ran *float64 // seconds it ran (nil: it never started)
		if err := pool.QueryRow(context.Background(), `SELECT status,
				extract(epoch FROM completed_at - processing_started_at)::float8
			FROM rota.tasks WHERE flow_id = $1 AND flow_step = 'long'`, f.id).Scan(&status, &ran); err != nil {
			t.Fatalf("flow %s's long step: %v", f.key, err)
		}
		if status != "CANCELED" || (ran != nil && *ran >= overlapRunFor.Seconds()) {
			t.Errorf("flow %s's long step is %s after %v s, want CANCELED before its %s", f.key, status, ran, overlapRunFor)
		}
	}
	if last := flows[len(flows)-1]; last.status != "SUCCEEDED" {
		t.Errorf("the last flow %s is %s, want SUCCEEDED", last.key, last.status)
	}
}
