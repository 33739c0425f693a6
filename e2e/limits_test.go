package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/history"
)

// The acceptance tests of flow control (issue #14, DESIGN.md section 11) with real
// processes: `rota worker` processes, an HTTP-protocol claimer through `rota serve`, and
// SQS mode through fauxqs. Queue settings are written straight through the store (the
// same rota.queues row the API and CLI write); every claim reads them.

// limitsRig is one test's world: a fresh database and a store on it.
type limitsRig struct {
	t     *testing.T
	dbURL string
	pool  *pgxpool.Pool
	st    *postgres.Store
}

func newLimitsRig(t *testing.T) *limitsRig {
	t.Helper()
	url, pool := newDB(t)
	st := postgres.New(pool)
	t.Cleanup(st.Close)
	return &limitsRig{t: t, dbURL: url, pool: pool, st: st}
}

func (r *limitsRig) setQueue(queue string, p store.QueuePatch) {
	r.t.Helper()
	if _, err := r.st.UpdateQueueSettings(context.Background(), queue, p); err != nil {
		r.t.Fatalf("UpdateQueueSettings(%s): %v", queue, err)
	}
}

func limit(n int) *store.Change[int] { return &store.Change[int]{To: &n} }

// create inserts tasks in batches and returns their ids in order.
func (r *limitsRig) create(params []store.CreateParams) []uuid.UUID {
	r.t.Helper()
	var ids []uuid.UUID
	for chunk := range slices.Chunk(params, 5000) {
		res, err := r.st.CreateTasks(context.Background(), chunk)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, c := range res {
			ids = append(ids, c.Task.ID)
		}
	}
	return ids
}

// sleepTasks is n `sleep` tasks of ms milliseconds in queue and group (may be "").
func sleepTasks(queue, group string, n, ms int) []store.CreateParams {
	ps := make([]store.CreateParams, n)
	for i := range ps {
		ps[i] = store.CreateParams{Queue: queue, GroupKey: group, Kind: "sleep", Payload: []byte(fmt.Sprintf(`{"ms": %d}`, ms)), MaxAttempts: 25}
	}
	return ps
}

// startWorker runs a poll-mode `rota worker` on queues at ROTA_CONCURRENCY concurrency.
func (r *limitsRig) startWorker(name, queues string, concurrency int) *proc {
	r.t.Helper()
	return startProc(r.t, name, []string{fmt.Sprintf("ROTA_CONCURRENCY=%d", concurrency)},
		"worker", "--mode", "poll", "--database-url", r.dbURL, "--queues", queues, "--worker-id", name,
		"--poll-interval", "100ms", "--lease", "10s", "--reap-interval", "500ms", "--log-level", "warn")
}

// startServe runs a poll-mode `rota serve` (the API for the HTTP claimer) and returns
// its URL.
func (r *limitsRig) startServe() string {
	r.t.Helper()
	return startServer(r.t, "serve", "serve", "--database-url", r.dbURL, "--addr", "127.0.0.1:0", "--log-level", "warn")
}

// dbNow is the database's clock, the one claims stamp processing_started_at with.
func (r *limitsRig) dbNow() time.Time {
	r.t.Helper()
	var now time.Time
	if err := r.pool.QueryRow(context.Background(), `SELECT now()`).Scan(&now); err != nil {
		r.t.Fatal(err)
	}
	return now
}

func (r *limitsRig) count(query string, args ...any) int {
	r.t.Helper()
	var n int
	if err := r.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		r.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// waitSucceeded waits until n tasks of queue have succeeded.
func (r *limitsRig) waitSucceeded(queue string, n int, timeout time.Duration) {
	r.t.Helper()
	waitFor(r.t, timeout, fmt.Sprintf("%d tasks of %s to succeed", n, queue), func() (bool, string) {
		done := r.count(`SELECT count(*) FROM rota.tasks WHERE queue = $1 AND status = 'SUCCEEDED'`, queue)
		return done >= n, fmt.Sprintf("%d succeeded; %v", done, statusCounts(r.t, r.pool))
	})
}

// sampler reads a number from the database every 20 ms until stopped and keeps the
// highest value seen.
type sampler struct {
	peak    atomic.Int64
	samples atomic.Int64
	stop    func()
}

func (r *limitsRig) sample(query string, args ...any) *sampler {
	s := &sampler{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var n int64
			if err := r.pool.QueryRow(ctx, query, args...).Scan(&n); err == nil {
				s.samples.Add(1)
				if n > s.peak.Load() {
					s.peak.Store(n)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	s.stop = func() { cancel(); wg.Wait() }
	return s
}

// httpClaimer works one queue through the HTTP worker protocol: claim, run the task
// itself (a `sleep` sleeps, an `http` task makes its call), complete.
type httpClaimer struct {
	base, queue string
	done        atomic.Int64
	mu          sync.Mutex
	err         error
}

func (h *httpClaimer) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
}

func (h *httpClaimer) error() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *httpClaimer) run(ctx context.Context) {
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(path string, body any) (*http.Response, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		return client.Do(req)
	}
	for ctx.Err() == nil {
		res, err := post("/api/queues/"+h.queue+"/claim", map[string]any{"worker_id": "http-claimer", "limit": 5,
			"lease_seconds": 10, "wait_seconds": 0.2})
		if err != nil {
			if ctx.Err() == nil {
				h.fail(err)
			}
			return
		}
		var claimed struct {
			Tasks []struct {
				ID         string          `json:"id"`
				Kind       string          `json:"kind"`
				Payload    json.RawMessage `json:"payload"`
				LeaseToken string          `json:"lease_token"`
			} `json:"tasks"`
		}
		err = json.NewDecoder(res.Body).Decode(&claimed)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || err != nil {
			h.fail(fmt.Errorf("claim: %d %v", res.StatusCode, err))
			return
		}
		for _, task := range claimed.Tasks {
			if err := execute(ctx, client, task.Kind, task.Payload, task.ID); err != nil {
				if ctx.Err() == nil {
					h.fail(err)
				}
				return
			}
			res, err := post("/api/tasks/"+task.ID+"/complete", map[string]any{"lease_token": task.LeaseToken})
			if err != nil {
				if ctx.Err() == nil {
					h.fail(err)
				}
				return
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				h.fail(fmt.Errorf("complete %s: %d", task.ID, res.StatusCode))
				return
			}
			h.done.Add(1)
		}
	}
}

// execute runs a `sleep` or `http` task as the built-in handlers would.
func execute(ctx context.Context, client *http.Client, kind string, payload json.RawMessage, id string) error {
	switch kind {
	case "sleep":
		var p struct{ MS int }
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		time.Sleep(time.Duration(p.MS) * time.Millisecond)
		return nil
	case "http":
		var p struct{ URL string }
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, nil)
		req.Header.Set("Rota-Task-Id", id)
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	}
	return fmt.Errorf("the HTTP claimer cannot run kind %q", kind)
}

// startClaimer runs an httpClaimer until the test ends (or stop is called).
func startClaimer(t *testing.T, base, queue string) (h *httpClaimer, stop func()) {
	h = &httpClaimer{base: base, queue: queue}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.run(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return h, stop
}

func succeededOnce(t *testing.T, pool *pgxpool.Pool, ids ...[]uuid.UUID) {
	t.Helper()
	want := map[uuid.UUID]store.Status{}
	for _, list := range ids {
		for _, id := range list {
			want[id] = store.StatusSucceeded
		}
	}
	history.AssertAll(t, pool, want)
}

// TestLimitConcurrencyNeverExceeded: 3 `rota worker` processes at concurrency 50 and an
// HTTP-protocol claimer work a queue with concurrency 5: a sampler reading the queue's
// PROCESSING count every 20 ms never sees more than 5, and every task succeeds once.
func TestLimitConcurrencyNeverExceeded(t *testing.T) {
	r := newLimitsRig(t)
	const n, cap = 2000, 5
	r.setQueue("capped", store.QueuePatch{Concurrency: limit(cap)})
	ids := r.create(sleepTasks("capped", "", n, 10))
	base := r.startServe()
	s := r.sample(`SELECT count(*) FROM rota.tasks WHERE queue = 'capped' AND status = 'PROCESSING'`)
	// The HTTP claimer starts first: the workers, which claim again the moment a task of
	// theirs ends, leave it few free slots once they run.
	h, stop := startClaimer(t, base, "capped")
	waitFor(t, 30*time.Second, "the HTTP claimer to run tasks", func() (bool, string) {
		return h.done.Load() >= 20, fmt.Sprintf("%d done, error %v", h.done.Load(), h.error())
	})
	for i := range 3 {
		r.startWorker(fmt.Sprintf("w%d", i), "capped", 50)
	}
	r.waitSucceeded("capped", n, 90*time.Second)
	stop()
	s.stop()
	if err := h.error(); err != nil {
		t.Fatalf("HTTP claimer: %v", err)
	}
	t.Logf("%d tasks; peak PROCESSING %d over %d samples; the HTTP claimer ran %d", n, s.peak.Load(), s.samples.Load(), h.done.Load())
	if p := s.peak.Load(); p > cap {
		t.Fatalf("the sampler saw %d tasks PROCESSING, concurrency %d", p, cap)
	}
	if s.peak.Load() < 2 || h.done.Load() == 0 {
		t.Errorf("the test did not exercise the limit: peak %d, HTTP claimer ran %d", s.peak.Load(), h.done.Load())
	}
	succeededOnce(t, r.pool, ids)
}

// groupCollector is a loopback service the `http` tasks call at /<group>: it records
// each call's start and end per group (a call lies within its attempt).
type groupCollector struct {
	mu    sync.Mutex
	spans map[string][][2]time.Time
	hold  time.Duration
}

func (c *groupCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	time.Sleep(c.hold)
	end := time.Now()
	group := strings.TrimPrefix(r.URL.Path, "/")
	c.mu.Lock()
	c.spans[group] = append(c.spans[group], [2]time.Time{start, end})
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// overlaps returns the groups in which two calls overlapped.
func (c *groupCollector) overlaps() (bad []string, calls int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for g, spans := range c.spans {
		calls += len(spans)
		slices.SortFunc(spans, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
		for i := 1; i < len(spans); i++ {
			if spans[i][0].Before(spans[i-1][1]) {
				bad = append(bad, fmt.Sprintf("%s (calls %s-%s and %s-%s)", g,
					spans[i-1][0].Format("15:04:05.000"), spans[i-1][1].Format("15:04:05.000"),
					spans[i][0].Format("15:04:05.000"), spans[i][1].Format("15:04:05.000")))
				break
			}
		}
	}
	return bad, calls
}

// TestLimitGroupConcurrencyOne: group_concurrency 1 over 20 groups, worked by 3 `rota
// worker` processes at concurrency 50 and an HTTP-protocol claimer: the loopback
// collector the `http` tasks call never sees two calls of one group at once, and the
// database never shows two tasks of one group PROCESSING.
func TestLimitGroupConcurrencyOne(t *testing.T) {
	r := newLimitsRig(t)
	col := &groupCollector{spans: map[string][][2]time.Time{}, hold: 15 * time.Millisecond}
	srv := httptest.NewServer(col)
	defer srv.Close()
	r.setQueue("tenants", store.QueuePatch{GroupConcurrency: limit(1)})
	const groups, per = 20, 20
	var params []store.CreateParams
	for range per {
		for g := range groups { // interleaved, as tenants' tasks arrive
			key := fmt.Sprintf("g%02d", g)
			payload, _ := json.Marshal(map[string]any{"url": srv.URL + "/" + key, "method": "POST"})
			params = append(params, store.CreateParams{Queue: "tenants", GroupKey: key, Kind: "http", Payload: payload, MaxAttempts: 25})
		}
	}
	ids := r.create(params)
	base := r.startServe()
	s := r.sample(`SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM rota.tasks
		WHERE queue = 'tenants' AND status = 'PROCESSING' GROUP BY group_key) g`)
	for i := range 3 {
		r.startWorker(fmt.Sprintf("w%d", i), "tenants", 50)
	}
	h, stop := startClaimer(t, base, "tenants")
	r.waitSucceeded("tenants", len(ids), 90*time.Second)
	stop()
	s.stop()
	if err := h.error(); err != nil {
		t.Fatalf("HTTP claimer: %v", err)
	}
	bad, calls := col.overlaps()
	t.Logf("%d calls over %d groups; peak PROCESSING of one group %d; the HTTP claimer ran %d", calls, groups, s.peak.Load(), h.done.Load())
	if len(bad) > 0 {
		t.Fatalf("attempts of one group overlapped under group_concurrency 1: %v", bad)
	}
	if p := s.peak.Load(); p > 1 {
		t.Fatalf("the sampler saw %d tasks of one group PROCESSING, group_concurrency 1", p)
	}
	if calls < len(ids) {
		t.Fatalf("the collector saw %d calls for %d tasks", calls, len(ids))
	}
	succeededOnce(t, r.pool, ids)
}

// TestLimitRate: rate 100 per second with a backlog worked by 2 `rota worker` processes
// at concurrency 50: no sliding 1-second window of claim times holds more than 100
// claims, and over the first 10 s the average is at least 85 per second.
func TestLimitRate(t *testing.T) {
	r := newLimitsRig(t)
	const n, rate = 1150, 100
	r.setQueue("rated", store.QueuePatch{Rate: &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: rate, PerSeconds: 1}}})
	ids := r.create(sleepTasks("rated", "", n, 1))
	for i := range 2 {
		r.startWorker(fmt.Sprintf("w%d", i), "rated", 50)
	}
	r.waitSucceeded("rated", n, 60*time.Second)

	// Every attempt's claim time (attempt rows outlive their task's next attempt).
	rows, err := r.pool.Query(context.Background(),
		`SELECT a.started_at FROM rota.task_attempts a JOIN rota.tasks t ON t.id = a.task_id WHERE t.queue = 'rated' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			t.Fatal(err)
		}
		times = append(times, at)
	}
	rows.Close()
	if len(times) < n {
		t.Fatalf("%d attempts for %d tasks", len(times), n)
	}
	worst := 0
	for i := range times {
		j, _ := slices.BinarySearchFunc(times, times[i].Add(time.Second), func(a, b time.Time) int { return a.Compare(b) })
		worst = max(worst, j-i) // claims in [times[i], times[i]+1s)
	}
	inTen := 0
	for _, at := range times {
		if at.Before(times[0].Add(10 * time.Second)) {
			inTen++
		}
	}
	t.Logf("%d claims; the busiest 1 s window held %d; the first 10 s held %d (%.1f per second)", len(times), worst, inTen, float64(inTen)/10)
	if worst > rate {
		t.Fatalf("a 1 s window held %d claims, rate %d per second", worst, rate)
	}
	if inTen < 850 {
		t.Fatalf("%d claims in the first 10 s, want at least 850 (85 per second) with a backlog", inTen)
	}
	succeededOnce(t, r.pool, ids)
}

// TestLimitFairness: group A's 20,000 due tasks are enqueued first and are draining
// when group B's 20 arrive: every B task starts within 2 s of its creation, while A
// still has a backlog. (Claiming in claim order alone would run B after all of A.)
func TestLimitFairness(t *testing.T) {
	r := newLimitsRig(t)
	r.create(sleepTasks("shared", "A", 20000, 50))
	r.startWorker("w0", "shared", 50)
	r.startWorker("w1", "shared", 50)
	r.waitSucceeded("shared", 100, 30*time.Second)
	b := r.create(sleepTasks("shared", "B", 20, 50))
	waitFor(t, 15*time.Second, "every B task to start", func() (bool, string) {
		started := r.count(`SELECT count(*) FROM rota.tasks WHERE id = ANY($1) AND processing_started_at IS NOT NULL`, b)
		return started == len(b), fmt.Sprintf("%d of %d B tasks started", started, len(b))
	})
	// Each B task ran once: its processing_started_at is its claim time.
	rows, err := r.pool.Query(context.Background(), `SELECT created_at, processing_started_at FROM rota.tasks WHERE id = ANY($1)`, b)
	if err != nil {
		t.Fatal(err)
	}
	var worst time.Duration
	for rows.Next() {
		var created, started time.Time
		if err := rows.Scan(&created, &started); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, started.Sub(created))
	}
	rows.Close()
	left := r.count(`SELECT count(*) FROM rota.tasks WHERE group_key = 'A' AND status = 'PENDING'`)
	t.Logf("the slowest B task started %s after its creation; A still had %d tasks waiting", worst, left)
	if worst > 2*time.Second {
		t.Fatalf("a B task started %s after its creation, want within 2 s while A drains", worst)
	}
	if left == 0 {
		t.Fatal("A drained before B ran: the test did not show fairness")
	}
}

// pausedStarts counts the claims of queue (attempts, and tasks' current ones) that
// started after the database time at.
func (r *limitsRig) pausedStarts(queue string, at time.Time) int {
	r.t.Helper()
	return r.count(`SELECT (SELECT count(*) FROM rota.tasks WHERE queue = $1 AND processing_started_at > $2)
		+ (SELECT count(*) FROM rota.task_attempts a JOIN rota.tasks t ON t.id = a.task_id WHERE t.queue = $1 AND a.started_at > $2)`,
		queue, at)
}

// checkPauseHolds pauses queue, reads the database's now() right after the call
// returned, waits hold, and checks that no claim of the queue started after that time
// and that nothing of it runs any more; it returns that time.
func (r *limitsRig) checkPauseHolds(queue string, hold time.Duration) time.Time {
	r.t.Helper()
	paused := true
	r.setQueue(queue, store.QueuePatch{Paused: &paused})
	at := r.dbNow()
	time.Sleep(hold)
	if n := r.pausedStarts(queue, at); n > 0 {
		r.t.Fatalf("%d claims of paused queue %s started after the pause returned", n, queue)
	}
	waitFor(r.t, 10*time.Second, "the running tasks to finish", func() (bool, string) {
		n := r.count(`SELECT count(*) FROM rota.tasks WHERE queue = $1 AND status = 'PROCESSING'`, queue)
		return n == 0, fmt.Sprintf("%d PROCESSING", n)
	})
	if n := r.pausedStarts(queue, at); n > 0 {
		r.t.Fatalf("%d claims of paused queue %s started after the pause returned", n, queue)
	}
	return at
}

// resumeRestarts resumes queue and waits until every worker in workers (worker ids)
// has claimed a task of it again; it returns how long that took.
func (r *limitsRig) resumeRestarts(queue string, workers ...string) time.Duration {
	r.t.Helper()
	resumed := false
	r.setQueue(queue, store.QueuePatch{Paused: &resumed})
	at := r.dbNow()
	start := time.Now()
	waitFor(r.t, 10*time.Second, fmt.Sprintf("claims of %s by %v after the resume", queue, workers), func() (bool, string) {
		got := r.count(`SELECT count(DISTINCT worker_id) FROM (
			SELECT worker_id FROM rota.tasks WHERE queue = $1 AND processing_started_at > $2 AND worker_id = ANY($3)
			UNION ALL SELECT a.worker_id FROM rota.task_attempts a JOIN rota.tasks t ON t.id = a.task_id
			 WHERE t.queue = $1 AND a.started_at > $2 AND a.worker_id = ANY($3)) w`, queue, at, workers)
		return got == len(workers), fmt.Sprintf("%d of %d workers claimed again", got, len(workers))
	})
	return time.Since(start)
}

// TestLimitPausePollAndHTTP: a queue worked by a `rota worker` and an HTTP-protocol
// claimer is paused: no task starts after the pause returned, the running ones finish,
// and resume restarts both at once.
func TestLimitPausePollAndHTTP(t *testing.T) {
	r := newLimitsRig(t)
	ids := r.create(sleepTasks("pz", "", 1500, 20))
	base := r.startServe()
	r.startWorker("poll-w", "pz", 20)
	h, stop := startClaimer(t, base, "pz")
	r.waitSucceeded("pz", 100, 30*time.Second)
	r.checkPauseHolds("pz", 1500*time.Millisecond)
	if h.done.Load() == 0 {
		t.Fatal("the HTTP claimer ran nothing before the pause")
	}
	took := r.resumeRestarts("pz", "poll-w", "http-claimer")
	t.Logf("after resume both workers claimed again within %s", took)
	r.waitSucceeded("pz", len(ids), 60*time.Second)
	stop()
	if err := h.error(); err != nil {
		t.Fatalf("HTTP claimer: %v", err)
	}
	succeededOnce(t, r.pool, ids)
}

// TestLimitPauseSQS: an SQS-mode queue is paused while its backlog is sent and worked:
// tasks created meanwhile are not sent, no task starts after the pause returned, no message is deleted for a task that did not
// run (every sent, unrun task still has its message, and all finish after the resume
// though the enqueuer would not send them again for 10 minutes), and resume restarts the
// work at once.
func TestLimitPauseSQS(t *testing.T) {
	sq := newSQSRig(t)
	r := &limitsRig{t: t, dbURL: sq.dbURL, pool: sq.pool, st: sq.store}
	sq.startServe("serve-sqs", "--sqs-create-queues", "--enqueue-interval", "100ms", "--redelivery-timeout", "10m")
	url := sq.queueURL(sq.queue)
	ids := sq.createIn("default", 1500, 20)
	sq.startWorker("sqs-w", "--concurrency", "20", "--lease", "10s")
	r.waitSucceeded("default", 100, 30*time.Second)
	paused := true
	r.setQueue("default", store.QueuePatch{Paused: &paused})
	// Tasks created while the queue is paused are not sent.
	late := sq.createIn("default", 50, 20)
	at := r.checkPauseHolds("default", 2*time.Second)
	if sent := r.count(`SELECT count(*) FROM rota.tasks WHERE id = ANY($1) AND enqueued_at IS NOT NULL`, late); sent > 0 {
		t.Fatalf("%d tasks created while the queue was paused were sent to SQS", sent)
	}

	// The tasks sent and not run still have their messages: nothing was deleted for them.
	unrun := r.count(`SELECT count(*) FROM rota.tasks WHERE queue = 'default' AND status = 'ENQUEUED' AND attempt_count = 0`)
	c, err := sq.counts(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("paused at %s: %d tasks sent and not run, %+v messages", at.Format(time.RFC3339Nano), unrun, c)
	if c.Total() < unrun {
		t.Fatalf("%d tasks were sent and never ran but the queue holds %d messages: messages were deleted", unrun, c.Total())
	}
	if unrun == 0 {
		t.Fatal("no sent task was waiting when the queue was paused: the test did not exercise the pause")
	}
	took := r.resumeRestarts("default", "sqs-w")
	t.Logf("after resume the SQS worker claimed again within %s", took)
	r.waitSucceeded("default", len(ids)+len(late), 60*time.Second)
	sq.assertFinal(allWant(store.StatusSucceeded, ids, late))
}
