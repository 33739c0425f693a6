package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestFlowScheduleTwoServersStartOneFlowPerTick: two `rota serve` processes claim a
// schedule of kind flow from one database. Moved minutes into the past (catch_up all),
// every missed tick starts exactly one flow (key schedule:<name>:<unix of the tick>),
// whichever server claims it, with its first step's task created once; moving it back
// over ticks that already have their flow, again and again while both servers claim,
// starts none twice.
func TestFlowScheduleTwoServersStartOneFlowPerTick(t *testing.T) {
	ctx := context.Background()
	dbURL, pool := newDB(t)
	args := func() []string {
		return []string{"serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--token", apiToken,
			"--schedule-interval", "50ms", "--log-level", "warn"}
	}
	a := apiClient{t: t, url: startServer(t, "serve-a", args()...), token: apiToken}
	b := apiClient{t: t, url: startServer(t, "serve-b", args()...), token: apiToken}

	a.call("POST", "/api/schedules", map[string]any{"name": "etl", "cron_spec": "* * * * *", "catch_up": "all",
		"flow": map[string]any{"name": "etl", "queue": "etl", "steps": []any{
			map[string]any{"name": "extract", "kind": "extract"},
			map[string]any{"name": "transform", "kind": "transform", "depends_on": []string{"extract"}, "for_each": "extract"},
			map[string]any{"name": "load", "kind": "load", "depends_on": []string{"transform"}},
		}}}).expect(t, "create flow schedule", 201, "")
	if n := flowRunCount(t, pool); n != 0 {
		t.Fatalf("%d flows before the first tick", n)
	}

	const minutes = 5
	moveBack := func(c apiClient) time.Time {
		var now time.Time
		if err := pool.QueryRow(ctx, `SELECT date_trunc('minute', now())`).Scan(&now); err != nil {
			t.Fatal(err)
		}
		from := now.Add(-minutes * time.Minute)
		c.call("POST", "/api/schedules/etl/reschedule", map[string]any{"next_run_at": from.UTC().Format(time.RFC3339)}).
			expect(t, "reschedule", 200, "")
		return from
	}
	from := moveBack(b)
	waitFor(t, 30*time.Second, "a flow per missed tick", func() (bool, string) {
		n := flowRunCount(t, pool)
		return n >= minutes+1, fmt.Sprintf("%d flows", n)
	})
	checkOneFlowPerTick(t, pool, from)

	// Over ticks that have their flows, through either server, several times.
	before := flowRunCount(t, pool)
	for i := range 6 {
		c := a
		if i%2 == 1 {
			c = b
		}
		moveBack(c)
		waitFor(t, 30*time.Second, "the schedule to be caught up again", func() (bool, string) {
			var next time.Time
			if err := pool.QueryRow(ctx, `SELECT next_run_at FROM rota.schedules WHERE name = 'etl'`).Scan(&next); err != nil {
				t.Fatal(err)
			}
			return next.After(time.Now().Add(-2 * time.Second)), "next_run_at " + next.String()
		})
	}
	checkOneFlowPerTick(t, pool, from)
	if after := flowRunCount(t, pool); after > before+1 { // at most a minute that turned meanwhile
		t.Fatalf("moving back over started ticks added %d flows", after-before)
	}
	var current string
	if err := pool.QueryRow(ctx, `SELECT current_run_id::text FROM rota.schedules WHERE name = 'etl'`).Scan(&current); err != nil {
		t.Fatalf("current run: %v", err)
	}
	var key string
	if err := pool.QueryRow(ctx, `SELECT idempotency_key FROM rota.flows WHERE id = $1`, current).Scan(&key); err != nil ||
		!strings.HasPrefix(key, "schedule:etl:") {
		t.Fatalf("the current run %s is no flow of the schedule (%q, %v)", current, key, err)
	}
}

// flowRunCount counts the flows the schedule started by its ticks.
func flowRunCount(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM rota.flows
		WHERE idempotency_key LIKE 'schedule:etl:%' AND idempotency_key NOT LIKE '%:trigger:%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkOneFlowPerTick: one flow per tick key, ticks every minute from `from` on with no
// gap, and each flow's extract step has exactly one task (its later steps none yet).
func checkOneFlowPerTick(t *testing.T, pool *pgxpool.Pool, from time.Time) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT f.idempotency_key, count(DISTINCT f.id),
			count(t.id) FILTER (WHERE t.flow_step = 'extract'), count(t.id) FILTER (WHERE t.flow_step <> 'extract')
		FROM rota.flows f LEFT JOIN rota.tasks t ON t.flow_id = f.id
		WHERE f.idempotency_key LIKE 'schedule:etl:%' GROUP BY 1 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ticks []int64
	for rows.Next() {
		var key string
		var flows, extract, others int
		if err := rows.Scan(&key, &flows, &extract, &others); err != nil {
			t.Fatal(err)
		}
		if flows != 1 || extract != 1 || others != 0 {
			t.Errorf("tick %s: %d flows, %d extract tasks, %d other tasks; want 1, 1, 0", key, flows, extract, others)
		}
		var unix int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(key, "schedule:etl:"), "%d", &unix); err != nil {
			t.Fatalf("flow key %q: %v", key, err)
		}
		ticks = append(ticks, unix)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ticks) == 0 || ticks[0] != from.Unix() {
		t.Fatalf("first tick %v, want %d (%s)", ticks, from.Unix(), from)
	}
	for i := 1; i < len(ticks); i++ {
		if ticks[i]-ticks[i-1] != 60 {
			t.Fatalf("ticks are not one minute apart: %v", ticks)
		}
	}
}
