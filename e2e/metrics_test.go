package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsMatchTheDatabase runs a real `rota serve` and `rota worker --metrics-addr`,
// sends a mix of tasks through the API, waits for all of them to finish, and checks what
// both processes export at /metrics against the rows in PostgreSQL.
func TestMetricsMatchTheDatabase(t *testing.T) {
	dbURL, pool := newDB(t)
	server := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0")
	worker := startServer(t, "worker", "worker", "--database-url", dbURL, "--metrics-addr", "127.0.0.1:0",
		"--queues", "default,emails", "--poll-interval", "100ms")
	c := apiClient{t: t, url: server}

	// 15 successes (a batch and singles, two queues), 3 tasks that fail twice then
	// succeed, 2 that end DEAD after 3 attempts, 2 permanent failures (FAILED), and one
	// idempotent repeat, which creates nothing.
	batch := []map[string]any{}
	for i := range 10 {
		batch = append(batch, map[string]any{"kind": "noop", "idempotency_key": fmt.Sprintf("noop-%d", i)})
	}
	c.call("POST", "/api/tasks/batch", map[string]any{"tasks": batch}).expect(t, "batch create", 201, "")
	for range 5 {
		c.call("POST", "/api/tasks", map[string]any{"kind": "noop", "queue": "emails"}).expect(t, "create", 201, "")
	}
	for range 3 {
		c.call("POST", "/api/tasks", map[string]any{"kind": "fail", "payload": map[string]any{"times": 2}}).expect(t, "create", 201, "")
	}
	for range 2 {
		c.call("POST", "/api/tasks", map[string]any{"kind": "fail", "max_attempts": 3}).expect(t, "create", 201, "")
		c.call("POST", "/api/tasks", map[string]any{"kind": "fail", "queue": "emails",
			"payload": map[string]any{"permanent": true}}).expect(t, "create", 201, "")
	}
	c.call("POST", "/api/tasks", map[string]any{"kind": "noop", "idempotency_key": "noop-0"}).expect(t, "idempotent create", 200, "")
	const created = 22

	waitFor(t, 60*time.Second, "every task to finish", func() (bool, string) {
		counts := statusCounts(t, pool)
		return counts["SUCCEEDED"]+counts["DEAD"]+counts["FAILED"] == created, fmt.Sprint(counts)
	})
	db := readDB(t, pool)
	if db.tasks["default/fail/SUCCEEDED"] != 3 || db.tasks["default/fail/DEAD"] != 2 || db.tasks["emails/fail/FAILED"] != 2 ||
		db.attempts["default/fail/RETRIED"] != 3*2+2*2 {
		t.Fatalf("the run did not go as the test assumes: tasks %v, attempts %v", db.tasks, db.attempts)
	}

	// The worker counts each outcome just after its commit, and the server's gauges are
	// cached for a few seconds: wait for both to catch up, then compare.
	var workerM, serverM families
	waitFor(t, 30*time.Second, "the worker's metrics to match the database", func() (bool, string) {
		workerM = scrape(t, worker+"/metrics")
		diff := compareWorker(workerM, db)
		return diff == "", diff
	})
	waitFor(t, 30*time.Second, "the server's metrics to match the database", func() (bool, string) {
		serverM = scrape(t, server+"/metrics")
		diff := compareServer(serverM, db, created)
		return diff == "", diff
	})

	// Latencies were measured, and each process exports only what it saw.
	if n := workerM.sum("rota_claim_duration_seconds", "queue"); n["emails"] == 0 || n["default"] == 0 {
		t.Errorf("claim latency counts by queue %v, want some for each queue", n)
	}
	if n := workerM.sum("rota_commit_duration_seconds")[""]; n == 0 || n > float64(db.totalAttempts) {
		t.Errorf("commit latency count %v, want between 1 and %d (one per batch)", n, db.totalAttempts)
	}
	if len(serverM.sum("rota_tasks_claimed_total")) != 0 || len(workerM.sum("rota_queue_tasks")) != 0 {
		t.Error("claims are counted by workers and queue gauges exported by servers only")
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "rota_schedule_claims_total", "rota_queue_settings_up"} {
		if _, ok := serverM[name]; !ok {
			t.Errorf("the server does not export %s", name)
		}
	}
	if resp, err := http.Get(worker + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("worker /healthz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// dbCounts are the database's answers, keyed "queue/kind/STATUS" or "queue/status".
type dbCounts struct {
	tasks         map[string]float64 // queue/kind/status -> tasks
	byQueue       map[string]float64 // queue/status -> tasks
	attempts      map[string]float64 // queue/kind/outcome -> attempt rows
	perKind       map[string]float64 // queue/kind -> attempt rows
	created       map[string]float64 // queue/kind -> tasks
	totalAttempts int
}

func readDB(t *testing.T, pool *pgxpool.Pool) dbCounts {
	t.Helper()
	d := dbCounts{tasks: map[string]float64{}, byQueue: map[string]float64{}, attempts: map[string]float64{},
		perKind: map[string]float64{}, created: map[string]float64{}}
	query(t, pool, `SELECT queue, kind, status, count(*) FROM rota.tasks GROUP BY 1, 2, 3`, func(q, k, s string, n int) {
		d.tasks[q+"/"+k+"/"+s] += float64(n)
		d.byQueue[q+"/"+s] += float64(n)
		d.created[q+"/"+k] += float64(n)
	})
	query(t, pool, `SELECT t.queue, t.kind, coalesce(a.outcome, 'RUNNING'), count(*)
		FROM rota.task_attempts a JOIN rota.tasks t ON t.id = a.task_id
		WHERE a.outcome IS DISTINCT FROM 'REPLAYED' GROUP BY 1, 2, 3`, func(q, k, o string, n int) {
		d.attempts[q+"/"+k+"/"+o] += float64(n)
		d.perKind[q+"/"+k] += float64(n)
		d.totalAttempts += n
	})
	return d
}

func query(t *testing.T, pool *pgxpool.Pool, sql string, row func(a, b, c string, n int)) {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a, b, c string
		var n int
		if err := rows.Scan(&a, &b, &c, &n); err != nil {
			t.Fatal(err)
		}
		row(a, b, c, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// compareWorker returns "" when the worker's counters equal the database, per queue and kind.
func compareWorker(m families, db dbCounts) string {
	var diffs []string
	check := func(what string, got, want map[string]float64) {
		for _, k := range union(got, want) {
			if got[k] != want[k] {
				diffs = append(diffs, fmt.Sprintf("%s{%s} = %v, database says %v", what, k, got[k], want[k]))
			}
		}
	}
	pick := func(src map[string]float64, suffix string) map[string]float64 {
		out := map[string]float64{}
		for k, v := range src {
			if key, ok := strings.CutSuffix(k, "/"+suffix); ok {
				out[key] = v
			}
		}
		return out
	}
	check("rota_tasks_claimed_total (attempt rows)", m.sum("rota_tasks_claimed_total", "queue", "kind"), db.perKind)
	check("rota_handler_duration_seconds count (attempt rows)", m.sum("rota_handler_duration_seconds", "queue", "kind"), db.perKind)
	check("rota_tasks_succeeded_total (SUCCEEDED tasks)", m.sum("rota_tasks_succeeded_total", "queue", "kind"), pick(db.tasks, "SUCCEEDED"))
	check("rota_tasks_dead_total (DEAD tasks)", m.sum("rota_tasks_dead_total", "queue", "kind"), pick(db.tasks, "DEAD"))
	check("rota_tasks_failed_total (FAILED tasks)", m.sum("rota_tasks_failed_total", "queue", "kind"), pick(db.tasks, "FAILED"))
	check("rota_tasks_retried_total (RETRIED attempts)", m.sum("rota_tasks_retried_total", "queue", "kind"), pick(db.attempts, "RETRIED"))
	check("rota_tasks_canceled_total", m.sum("rota_tasks_canceled_total", "queue", "kind"), pick(db.tasks, "CANCELED"))
	check("rota_lease_lost_total", m.sum("rota_lease_lost_total"), map[string]float64{})
	return strings.Join(diffs, "; ")
}

// compareServer returns "" when the server's enqueue counter and queue gauges equal the
// database.
func compareServer(m families, db dbCounts, created int) string {
	var diffs []string
	enqueued := m.sum("rota_tasks_enqueued_total", "queue", "kind")
	for _, k := range union(enqueued, db.created) {
		if enqueued[k] != db.created[k] {
			diffs = append(diffs, fmt.Sprintf("rota_tasks_enqueued_total{%s} = %v, database holds %v", k, enqueued[k], db.created[k]))
		}
	}
	if total := m.sum("rota_tasks_enqueued_total")[""]; total != float64(created) {
		diffs = append(diffs, fmt.Sprintf("rota_tasks_enqueued_total = %v, the API created %d", total, created))
	}
	gauges := m.sum("rota_queue_tasks", "queue", "status")
	for _, q := range []string{"default", "emails"} {
		for _, s := range []string{"PENDING", "ENQUEUED", "PROCESSING", "SUCCEEDED", "FAILED", "DEAD", "CANCELED"} {
			k := q + "/" + s
			if _, ok := gauges[k]; !ok || gauges[k] != db.byQueue[k] {
				diffs = append(diffs, fmt.Sprintf("rota_queue_tasks{%s} = %v (present %v), database holds %v", k, gauges[k], ok, db.byQueue[k]))
			}
		}
	}
	if up := m.sum("rota_queue_stats_up")[""]; up != 1 {
		diffs = append(diffs, fmt.Sprintf("rota_queue_stats_up = %v", up))
	}
	return strings.Join(diffs, "; ")
}

// families is one scrape, parsed.
type families map[string]*dto.MetricFamily

func scrape(t *testing.T, url string) families {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: status %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mf
}

// sum adds up the metric's series (a histogram's sample counts) grouped by the values of
// the given labels joined with "/"; with no labels, everything goes under "".
func (f families) sum(name string, by ...string) map[string]float64 {
	out := map[string]float64{}
	mf := f[name]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		var key []string
		for _, l := range by {
			v := ""
			for _, p := range m.GetLabel() {
				if p.GetName() == l {
					v = p.GetValue()
				}
			}
			key = append(key, v)
		}
		var v float64
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			v = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			v = m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			v = float64(m.GetHistogram().GetSampleCount())
		}
		out[strings.Join(key, "/")] += v
	}
	return out
}

func union(a, b map[string]float64) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
