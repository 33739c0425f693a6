package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestSchedulesTwoServersFireOncePerTick: two `rota serve` processes claim schedules from
// one database. A `* * * * *` schedule is moved a few minutes into the past (simulated
// minutes instead of sleeping): every missed tick is enqueued exactly once, whichever
// server claims it, and moving it back again over ticks already enqueued repeats none.
func TestSchedulesTwoServersFireOncePerTick(t *testing.T) {
	ctx := context.Background()
	dbURL, pool := newDB(t)
	args := func() []string {
		return []string{"serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--token", apiToken,
			"--schedule-interval", "50ms", "--log-level", "warn"}
	}
	urlA := startServer(t, "serve-a", args()...)
	urlB := startServer(t, "serve-b", args()...)
	a := apiClient{t: t, url: urlA, token: apiToken}
	b := apiClient{t: t, url: urlB, token: apiToken}

	a.call("POST", "/api/schedules", map[string]any{"name": "every-minute", "cron_spec": "* * * * *",
		"catch_up": "all", "task": map[string]any{"kind": "noop", "queue": "cron"}}).expect(t, "create schedule", 201, "")
	// Not due yet: nothing is enqueued until its tick comes.
	if n := runCount(t, pool); n != 0 {
		t.Fatalf("%d runs before the first tick", n)
	}

	const minutes = 5
	moveBack := func(c apiClient, by int) time.Time {
		// The database's clock decides; align to a minute so the ticks are whole minutes.
		var now time.Time
		if err := pool.QueryRow(ctx, `SELECT date_trunc('minute', now())`).Scan(&now); err != nil {
			t.Fatal(err)
		}
		from := now.Add(-time.Duration(by) * time.Minute)
		c.call("POST", "/api/schedules/every-minute/reschedule", map[string]any{"next_run_at": from.UTC().Format(time.RFC3339)}).
			expect(t, "reschedule", 200, "")
		return from
	}
	from := moveBack(b, minutes)
	// Every tick from `from` up to now (minutes+1 ticks, or one more if a minute turns
	// meanwhile) is enqueued, once.
	waitFor(t, 30*time.Second, "the missed ticks to be enqueued", func() (bool, string) {
		n := runCount(t, pool)
		return n >= minutes+1, fmt.Sprintf("%d runs", n)
	})
	checkOncePerTick(t, pool, from)

	// Again, over ticks already enqueued: none is repeated.
	before := runCount(t, pool)
	moveBack(a, minutes)
	waitFor(t, 30*time.Second, "the schedule to be caught up again", func() (bool, string) {
		var next time.Time
		if err := pool.QueryRow(ctx, `SELECT next_run_at FROM rota.schedules WHERE name = 'every-minute'`).Scan(&next); err != nil {
			t.Fatal(err)
		}
		return next.After(time.Now().Add(-2 * time.Second)), "next_run_at " + next.String()
	})
	checkOncePerTick(t, pool, from)
	if after := runCount(t, pool); after > before+1 { // at most a minute that turned meanwhile
		t.Fatalf("moving back over enqueued ticks added %d runs", after-before)
	}

	runs := a.call("GET", "/api/schedules/every-minute/runs?limit=100", nil).expect(t, "runs", 200, "")
	t.Logf("%d runs listed through the API", len(runs.list("tasks")))
}

// runCount counts the tasks the schedule created by its ticks (triggers excluded).
func runCount(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM rota.tasks
		WHERE idempotency_key LIKE 'schedule:every-minute:%' AND idempotency_key NOT LIKE '%:trigger:%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkOncePerTick: one run per tick key, and the ticks are every minute from `from` on,
// with no gap.
func checkOncePerTick(t *testing.T, pool *pgxpool.Pool, from time.Time) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT idempotency_key, count(*) FROM rota.tasks
		WHERE idempotency_key LIKE 'schedule:every-minute:%' GROUP BY idempotency_key ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ticks []int64
	for rows.Next() {
		var key string
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("tick %s was enqueued %d times", key, n)
		}
		var unix int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(key, "schedule:every-minute:"), "%d", &unix); err != nil {
			t.Fatalf("run key %q: %v", key, err)
		}
		ticks = append(ticks, unix)
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
