package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The acceptance test of schedule overlap (DESIGN.md section 11): for each policy a
// schedule fires every second while each of its runs, the built-in `sleep` kind run by a
// real `rota worker`, lasts 2.5 periods. Cron specs fire at most once a minute, so the
// test fires the ticks itself, end to end through the API: once a second it moves the
// schedule's next_run_at (POST /reschedule) to the next second of a past range, and the
// schedule loop of a real `rota serve` claims it. Each policy then holds to its rule,
// seen by a sampler of the database every 20 ms and by the runs' history at the end.

const (
	overlapTicks  = 9
	overlapRunFor = 2500 * time.Millisecond
)

// overlapRun is one run of a schedule as the database has it at the end.
type overlapRun struct {
	key                          string
	status                       string
	scheduledFor, createdAt      time.Time
	started, completed, canceled *time.Time
}

// overlapSample is the worst the sampler saw for one queue.
type overlapSample struct {
	maxProcessing, maxHeld int
}

func TestScheduleOverlapPoliciesWithRealRuns(t *testing.T) {
	ctx := context.Background()
	dbURL, pool := newDB(t)
	url := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--token", apiToken,
		"--schedule-interval", "100ms", "--log-level", "warn")
	policies := []string{"allow", "skip", "buffer_one", "cancel_other"}
	queue := func(p string) string { return "ov-" + strings.ReplaceAll(p, "_", "-") }
	var queues []string
	for _, p := range policies {
		queues = append(queues, queue(p))
	}
	startProc(t, "worker", nil, "worker", "--database-url", dbURL, "--queues", strings.Join(queues, ","),
		"--poll-interval", "100ms", "--log-level", "warn")
	c := apiClient{t: t, url: url, token: apiToken}
	for _, p := range policies {
		c.call("POST", "/api/schedules", map[string]any{"name": queue(p), "cron_spec": "0 0 1 1 *", "overlap": p,
			"task": map[string]any{"kind": "sleep", "queue": queue(p), "payload": map[string]any{"ms": overlapRunFor.Milliseconds()}}}).
			expect(t, "create schedule "+p, 201, "")
	}

	samples := sampleOverlap(t, pool, queues)
	// One tick per second per schedule, each a distinct second of a past hour (a yearly
	// spec: the moment moved to is the only due tick).
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	tick := time.NewTicker(time.Second)
	for i := range overlapTicks {
		for _, p := range policies {
			at := base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
			c.call("POST", "/api/schedules/"+queue(p)+"/reschedule", map[string]any{"next_run_at": at}).expect(t, "reschedule", 200, "")
		}
		<-tick.C
	}
	tick.Stop()
	// Every tick claimed, then every run finished.
	waitFor(t, 60*time.Second, "every run to finish", func() (bool, string) {
		var due, live int
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM rota.schedules WHERE next_run_at <= now()),
		                                     (SELECT count(*) FROM rota.tasks WHERE status IN ('PENDING', 'ENQUEUED', 'PROCESSING'))`).
			Scan(&due, &live); err != nil {
			t.Fatal(err)
		}
		return due == 0 && live == 0, fmt.Sprintf("%d schedules due, %d runs unfinished", due, live)
	})
	seen := samples()

	// One subtest per policy, on the runs of its own schedule.
	for _, p := range policies {
		t.Run(p, func(t *testing.T) { checkOverlapPolicy(t, c, pool, p, queue(p), seen[queue(p)]) })
	}
}

// checkOverlapPolicy checks one schedule's history against its policy.
func checkOverlapPolicy(t *testing.T, c apiClient, pool *pgxpool.Pool, p, q string, seen overlapSample) {
	c.t = t
	runs := overlapHistory(t, pool, q)
	sc := c.call("GET", "/api/schedules/"+q, nil).expect(t, "get "+q, 200, "")
	skipped := int(sc.body["skipped_ticks"].(float64))
	t.Logf("%-12s %d runs, %d skipped ticks, at most %d running and %d held at once; statuses %v",
		p, len(runs), skipped, seen.maxProcessing, seen.maxHeld, overlapStatuses(runs))
	if len(runs)+skipped != overlapTicks {
		t.Errorf("%s: %d runs + %d skipped ticks, want the %d ticks", p, len(runs), skipped, overlapTicks)
	}
	switch p {
	case "allow":
		if skipped != 0 || overlapMaxConcurrent(runs) < 2 || seen.maxProcessing < 2 {
			t.Errorf("allow: %d skipped, at most %d runs at once in the history (%d sampled), want runs that overlap",
				skipped, overlapMaxConcurrent(runs), seen.maxProcessing)
		}
		overlapAll(t, p, runs, "SUCCEEDED")
	case "skip":
		if skipped == 0 || len(runs) < 2 {
			t.Errorf("skip: %d runs, %d skipped; want several runs and skipped ticks", len(runs), skipped)
		}
		if n := overlapMaxConcurrent(runs); n > 1 || seen.maxProcessing > 1 {
			t.Errorf("skip: %d runs at once in the history, %d sampled; want never two", n, seen.maxProcessing)
		}
		overlapAll(t, p, runs, "SUCCEEDED")
	case "buffer_one":
		if skipped == 0 || len(runs) < 3 {
			t.Errorf("buffer_one: %d runs, %d skipped; want several runs and skipped ticks", len(runs), skipped)
		}
		if seen.maxHeld != 1 {
			t.Errorf("buffer_one: at most %d runs held at once, want exactly one at times", seen.maxHeld)
		}
		if n := overlapMaxConcurrent(runs); n > 1 || seen.maxProcessing > 1 {
			t.Errorf("buffer_one: %d runs at once in the history, %d sampled; want never two", n, seen.maxProcessing)
		}
		overlapAll(t, p, runs, "SUCCEEDED")
		// Each buffered run was made due in the transaction that finished the one before
		// (scheduled_for = that completed_at, one now()), and started after it.
		buffered := 0
		for i := 1; i < len(runs); i++ {
			prev, r := runs[i-1], runs[i]
			if r.started.Before(*prev.completed) {
				t.Errorf("buffer_one: run %s started at %s, before run %s ended at %s", r.key, r.started, prev.key, prev.completed)
			}
			if r.scheduledFor.Equal(*prev.completed) {
				buffered++
			}
		}
		if buffered == 0 {
			t.Errorf("buffer_one: no run was released by the end of the one before")
		}
	case "cancel_other":
		if skipped != 0 || len(runs) != overlapTicks {
			t.Errorf("cancel_other: %d runs, %d skipped; want a run per tick", len(runs), skipped)
		}
		// Every run but the last was canceled by the next one's claim: a cancel request
		// (or, not started yet, CANCELED) at the next run's created_at, one now(), and
		// it ended before its 2.5 s were up.
		for i := 0; i+1 < len(runs); i++ {
			r, next := runs[i], runs[i+1]
			if r.status != "CANCELED" {
				t.Errorf("cancel_other: run %s is %s, want CANCELED by run %s", r.key, r.status, next.key)
				continue
			}
			canceledAt := r.completed
			if r.canceled != nil {
				canceledAt = r.canceled
			}
			if !canceledAt.Equal(next.createdAt) {
				t.Errorf("cancel_other: run %s canceled at %s, run %s created at %s: want one transaction", r.key, canceledAt, next.key, next.createdAt)
			}
			if r.started != nil && r.completed.Sub(*r.started) >= overlapRunFor {
				t.Errorf("cancel_other: run %s ran its full %s", r.key, r.completed.Sub(*r.started))
			}
		}
		if last := runs[len(runs)-1]; last.status != "SUCCEEDED" {
			t.Errorf("cancel_other: the last run is %s, want SUCCEEDED", last.status)
		}
	}
}

// sampleOverlap reads, every 20 ms until the returned function is called, how many runs
// of each queue are PROCESSING and how many are held; the function returns the maxima.
func sampleOverlap(t *testing.T, pool *pgxpool.Pool, queues []string) func() map[string]overlapSample {
	ctx, cancel := context.WithCancel(context.Background())
	out := map[string]overlapSample{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			rows, err := pool.Query(ctx, `SELECT queue, count(*) FILTER (WHERE status = 'PROCESSING'),
			                                   count(*) FILTER (WHERE status = 'PENDING' AND scheduled_for = '9999-12-31 00:00:00+00')
			                            FROM rota.tasks WHERE queue = ANY($1) GROUP BY queue`, queues)
			if err == nil {
				for rows.Next() {
					var q string
					var processing, held int
					if rows.Scan(&q, &processing, &held) == nil {
						s := out[q]
						s.maxProcessing, s.maxHeld = max(s.maxProcessing, processing), max(s.maxHeld, held)
						out[q] = s
					}
				}
				rows.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	t.Cleanup(cancel)
	return func() map[string]overlapSample {
		cancel()
		wg.Wait()
		return out
	}
}

// overlapHistory returns the queue's runs in tick order (by key).
func overlapHistory(t *testing.T, pool *pgxpool.Pool, queue string) []overlapRun {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT idempotency_key, status, scheduled_for, created_at,
	        processing_started_at, completed_at, cancel_requested_at
	    FROM rota.tasks WHERE queue = $1 ORDER BY idempotency_key`, queue)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []overlapRun
	for rows.Next() {
		var r overlapRun
		if err := rows.Scan(&r.key, &r.status, &r.scheduledFor, &r.createdAt, &r.started, &r.completed, &r.canceled); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// overlapMaxConcurrent is the most runs whose [started, completed) intervals overlap.
func overlapMaxConcurrent(runs []overlapRun) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range runs {
		if r.started != nil && r.completed != nil {
			edges = append(edges, edge{*r.started, 1}, edge{*r.completed, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

func overlapAll(t *testing.T, policy string, runs []overlapRun, status string) {
	t.Helper()
	for _, r := range runs {
		if r.status != status || r.started == nil || r.completed == nil {
			t.Errorf("%s: run %s is %s, want %s after running", policy, r.key, r.status, status)
		}
	}
}

func overlapStatuses(runs []overlapRun) map[string]int {
	out := map[string]int{}
	for _, r := range runs {
		out[r.status]++
	}
	return out
}
