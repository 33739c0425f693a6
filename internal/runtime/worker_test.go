package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

func TestSuccess(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	seen := make(chan runtime.Job, 1)
	mux.HandleFunc("ok", func(ctx context.Context, job *runtime.Job) error {
		seen <- *job
		return nil
	})
	h := newHarness(t, mux, testConfig(t)).start()
	id := h.create(store.CreateParams{Kind: "ok", Payload: []byte(`{"x":1}`), MaxAttempts: 3})[0]

	job := recv(t, "the handler", seen)
	if job.Task.ID != id || job.Task.Kind != "ok" || string(job.Task.Payload) != `{"x":1}` ||
		job.Task.AttemptCount != 1 || job.Task.MaxAttempts != 3 || job.Task.Queue != "default" {
		t.Fatalf("handler got %+v", job.Task)
	}
	task := h.waitStatus(id, store.StatusSucceeded)
	if task.AttemptCount != 1 || task.WorkerID != "test-worker" {
		t.Fatalf("task = %+v", task)
	}
	waitFor(t, "stats", func() bool { return h.worker.Stats().Succeeded == 1 })
	st := h.worker.Stats()
	if st.Claimed != 1 || st.Retried != 0 || st.Failed != 0 || st.Dead != 0 {
		t.Fatalf("stats = %+v", st)
	}
	if a := h.attempts(id); len(a) != 1 || a[0].Outcome != store.OutcomeSucceeded {
		t.Fatalf("attempts = %+v", a)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("flaky", func(ctx context.Context, job *runtime.Job) error {
		if job.Task.AttemptCount < 3 {
			return fmt.Errorf("flaky attempt %d", job.Task.AttemptCount)
		}
		return nil
	})
	h := newHarness(t, mux, testConfig(t)).start()
	id := h.create(store.CreateParams{Kind: "flaky"})[0]

	task := h.waitStatus(id, store.StatusSucceeded)
	if task.AttemptCount != 3 {
		t.Fatalf("attempt_count = %d, want 3", task.AttemptCount)
	}
	a := h.attempts(id)
	if len(a) != 3 || a[0].Outcome != store.OutcomeRetried || a[0].Error != "flaky attempt 1" ||
		a[1].Outcome != store.OutcomeRetried || a[2].Outcome != store.OutcomeSucceeded {
		t.Fatalf("attempts = %+v", a)
	}
	waitFor(t, "stats", func() bool {
		st := h.worker.Stats()
		return st.Retried == 2 && st.Succeeded == 1
	})
}

func TestPermanentFails(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("bad", func(ctx context.Context, job *runtime.Job) error {
		return fmt.Errorf("wrapped: %w", runtime.Permanent(errors.New("bad input")))
	})
	h := newHarness(t, mux, testConfig(t)).start()
	id := h.create(store.CreateParams{Kind: "bad", MaxAttempts: 5})[0]

	task := h.waitStatus(id, store.StatusFailed)
	if task.AttemptCount != 1 || task.LastError != "wrapped: bad input" {
		t.Fatalf("task = %+v", task)
	}
	waitFor(t, "stats", func() bool { return h.worker.Stats().Failed == 1 })
}

func TestExhaustedGoesDead(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("always", func(ctx context.Context, job *runtime.Job) error {
		return errors.New("still broken")
	})
	h := newHarness(t, mux, testConfig(t)).start()
	id := h.create(store.CreateParams{Kind: "always", MaxAttempts: 3})[0]

	task := h.waitStatus(id, store.StatusDead)
	if task.AttemptCount != 3 || task.LastError != "still broken" {
		t.Fatalf("task = %+v", task)
	}
	waitFor(t, "stats", func() bool {
		st := h.worker.Stats()
		return st.Retried == 2 && st.Dead == 1
	})
	events, _, err := h.store.ListDeadLetters(context.Background(), store.DeadLetterParams{})
	if err != nil || len(events) != 1 || events[0].Reason != store.StatusDead {
		t.Fatalf("dead letters = %+v, %v", events, err)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	const snooze = 300 * time.Millisecond
	mux := runtime.NewMux()
	var mu sync.Mutex
	var starts []time.Time
	mux.HandleFunc("snooze", func(ctx context.Context, job *runtime.Job) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		if job.Task.AttemptCount == 1 {
			return runtime.RetryAfter(snooze, errors.New("not yet"))
		}
		return nil
	})
	cfg := testConfig(t)
	cfg.BackoffBase, cfg.BackoffMax = time.Hour, time.Hour // RetryAfter must not use them
	h := newHarness(t, mux, cfg).start()
	id := h.create(store.CreateParams{Kind: "snooze", MaxAttempts: 2})[0]

	var task *store.Task
	waitFor(t, "the snoozed attempt", func() bool {
		task = h.get(id)
		return task.AttemptCount >= 1 && task.Status != store.StatusProcessing
	})
	if task.Status != store.StatusPending || task.AttemptCount != 1 || task.LastError != "not yet" {
		t.Fatalf("snoozed task = %+v", task)
	}
	h.waitStatus(id, store.StatusSucceeded)
	mu.Lock()
	defer mu.Unlock()
	if len(starts) != 2 {
		t.Fatalf("%d attempts, want 2", len(starts))
	}
	if gap := starts[1].Sub(starts[0]); gap < snooze || gap > snooze+2*time.Second {
		t.Fatalf("second attempt came %s after the first, want about %s", gap, snooze)
	}
}

func TestRetryAfterOnLastAttemptIsDead(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("snooze", func(ctx context.Context, job *runtime.Job) error {
		return runtime.RetryAfter(time.Millisecond, errors.New("not yet"))
	})
	h := newHarness(t, mux, testConfig(t)).start()
	id := h.create(store.CreateParams{Kind: "snooze", MaxAttempts: 2})[0]
	if task := h.waitStatus(id, store.StatusDead); task.AttemptCount != 2 {
		t.Fatalf("task = %+v", task)
	}
}

func TestPanicIsRetried(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("panics", func(ctx context.Context, job *runtime.Job) error {
		if job.Task.AttemptCount == 1 {
			panicHere("kaboom")
		}
		return nil
	})
	h := newHarness(t, mux, testConfig(t)).start()
	id := h.create(store.CreateParams{Kind: "panics"})[0]

	h.waitStatus(id, store.StatusSucceeded)
	a := h.attempts(id)
	if len(a) != 2 || a[0].Outcome != store.OutcomeRetried {
		t.Fatalf("attempts = %+v", a)
	}
	if !strings.Contains(a[0].Error, "panic: kaboom") || !strings.Contains(a[0].Error, "panicHere") {
		t.Fatalf("attempt 1 error %q lacks the panic value or its stack", a[0].Error)
	}
	if st := h.worker.Stats(); st.Panics != 1 {
		t.Fatalf("Panics = %d, want 1", st.Panics)
	}
}

func panicHere(v string) { panic(v) }

func TestUnknownKind(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("known", func(context.Context, *runtime.Job) error { return nil })
	h := newHarness(t, mux, testConfig(t)).start()
	unknown := h.create(store.CreateParams{Kind: "nope", MaxAttempts: 2})[0]
	known := h.create(store.CreateParams{Kind: "known"})[0]

	task := h.waitStatus(unknown, store.StatusDead)
	if task.LastError != `no handler registered for kind "nope"` || task.AttemptCount != 2 {
		t.Fatalf("task = %+v", task)
	}
	h.waitStatus(known, store.StatusSucceeded) // the worker kept going
	if st := h.worker.Stats(); st.NoHandler != 2 {
		t.Fatalf("NoHandler = %d, want 2", st.NoHandler)
	}
}

func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	blockUntilDone := func(ctx context.Context, job *runtime.Job) error {
		<-ctx.Done()
		return ctx.Err()
	}
	sleep := func(ctx context.Context, job *runtime.Job) error {
		select {
		case <-time.After(100 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	mux.HandleFunc("kind-timeout", blockUntilDone, runtime.WithTimeout(30*time.Millisecond))
	mux.HandleFunc("default-timeout", blockUntilDone)
	mux.HandleFunc("task-timeout", sleep, runtime.WithTimeout(10*time.Millisecond))
	cfg := testConfig(t)
	cfg.DefaultTimeout = 40 * time.Millisecond
	h := newHarness(t, mux, cfg).start()
	ids := h.create(
		store.CreateParams{Kind: "kind-timeout", MaxAttempts: 1},
		store.CreateParams{Kind: "default-timeout", MaxAttempts: 1},
		// The task's own timeout (1s) overrides the kind's 10ms: the 100ms sleep succeeds.
		store.CreateParams{Kind: "task-timeout", MaxAttempts: 1, TimeoutSeconds: 1},
	)
	for _, id := range ids[:2] {
		task := h.waitStatus(id, store.StatusDead)
		if !strings.Contains(task.LastError, "attempt timed out after") || !strings.Contains(task.LastError, "deadline exceeded") {
			t.Errorf("%s: last_error = %q", task.Kind, task.LastError)
		}
	}
	if !strings.Contains(h.get(ids[0]).LastError, "30ms") || !strings.Contains(h.get(ids[1]).LastError, "40ms") {
		t.Errorf("timeouts: %q, %q", h.get(ids[0]).LastError, h.get(ids[1]).LastError)
	}
	h.waitStatus(ids[2], store.StatusSucceeded)
}

func TestQueueConcurrencyLimits(t *testing.T) {
	t.Parallel()
	limits := map[string]int{"a": 2, "b": 3, "c": 0} // c: up to Concurrency
	const total = 4
	gauges := map[string]*gauge{"a": {}, "b": {}, "c": {}}
	var all gauge
	g := newGate()
	mux := runtime.NewMux()
	mux.HandleFunc("work", func(ctx context.Context, job *runtime.Job) error {
		qg := gauges[job.Task.Queue]
		qg.inc()
		all.inc()
		defer qg.dec()
		defer all.dec()
		<-g.ch
		return nil
	})
	cfg := testConfig(t)
	cfg.Concurrency = total
	cfg.Queues = limits
	h := newHarness(t, mux, cfg)
	var params []store.CreateParams
	for _, q := range []string{"a", "b", "c"} {
		for range 15 {
			params = append(params, store.CreateParams{Kind: "work", Queue: q})
		}
	}
	ids := h.create(params...)
	h.start()

	// The worker fills up to its total capacity and stops there.
	waitFor(t, "all slots busy", func() bool { return all.cur.Load() == total })
	if st := h.worker.Stats(); st.Claimed != total || st.Running != total {
		t.Fatalf("with every slot busy: %+v", st)
	}
	g.open()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
	for q, limit := range limits {
		if limit == 0 {
			limit = total
		}
		if p := gauges[q].peak.Load(); p > int64(limit) {
			t.Errorf("queue %s: %d handlers at once, limit %d", q, p, limit)
		}
	}
	if p := all.peak.Load(); p > total {
		t.Errorf("%d handlers at once, Concurrency %d", p, total)
	}
}

func TestQueueLimitReached(t *testing.T) {
	t.Parallel()
	var running gauge
	g := newGate()
	mux := runtime.NewMux()
	mux.HandleFunc("work", func(ctx context.Context, job *runtime.Job) error {
		running.inc()
		defer running.dec()
		<-g.ch
		return nil
	})
	cfg := testConfig(t)
	cfg.Queues = map[string]int{"q": 3}
	var claims atomic.Int64
	var limits sync.Map
	ws := &wrapStore{Store: newMemoryStore(t)}
	ws.claim = func(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
		claims.Add(1)
		limits.Store(claims.Load(), p.Limit)
		return ws.Store.ClaimTasks(ctx, p)
	}
	cfg.Store = ws
	h := newHarness(t, mux, cfg)
	var params []store.CreateParams
	for range 10 {
		params = append(params, store.CreateParams{Kind: "work", Queue: "q"})
	}
	ids := h.create(params...)
	h.start()
	waitFor(t, "3 running", func() bool { return running.cur.Load() == 3 })
	g.open()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
	if p := running.peak.Load(); p != 3 {
		t.Fatalf("peak = %d, want 3", p)
	}
	limits.Range(func(k, v any) bool {
		if v.(int) > 3 {
			t.Errorf("claim %d asked for %d tasks with 3 slots", k, v)
		}
		return true
	})
}

func TestFullBatchClaimsAgain(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	cfg.PollInterval = time.Hour // only the backlog rule can find the rest
	cfg.FetchBatch = 2
	h := newHarness(t, mux, cfg)
	var params []store.CreateParams
	for range 9 {
		params = append(params, store.CreateParams{Kind: "noop"})
	}
	ids := h.create(params...)
	h.start()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
}

func TestFreedSlotClaimsAgain(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	cfg.PollInterval = time.Hour
	cfg.Concurrency = 1
	h := newHarness(t, mux, cfg)
	ids := h.create(store.CreateParams{Kind: "noop"}, store.CreateParams{Kind: "noop"}, store.CreateParams{Kind: "noop"})
	h.start()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
}

func TestWakeUpOnInsert(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	cfg.PollInterval = time.Hour // only a wake-up can find the task
	var claims atomic.Int64
	ws := &wrapStore{Store: newMemoryStore(t)}
	ws.claim = func(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
		defer claims.Add(1)
		return ws.Store.ClaimTasks(ctx, p)
	}
	cfg.Store = ws
	h := newHarness(t, mux, cfg).start()
	waitFor(t, "the first (empty) claim", func() bool { return claims.Load() >= 1 })
	id := h.create(store.CreateParams{Kind: "noop"})[0]
	h.waitStatus(id, store.StatusSucceeded)
}

func TestClaimErrorsAreRetried(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	var failing atomic.Int64
	failing.Store(3)
	ws := &wrapStore{Store: newMemoryStore(t)}
	ws.claim = func(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
		if failing.Add(-1) >= 0 {
			return nil, errors.New("connection refused")
		}
		return ws.Store.ClaimTasks(ctx, p)
	}
	cfg.Store = ws
	h := newHarness(t, mux, cfg)
	id := h.create(store.CreateParams{Kind: "noop"})[0]
	h.start()
	h.waitStatus(id, store.StatusSucceeded)
	if st := h.worker.Stats(); st.ClaimErrors != 3 {
		t.Fatalf("ClaimErrors = %d, want 3", st.ClaimErrors)
	}
}

func TestCommitErrorsAreRetried(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	var failing atomic.Int64
	failing.Store(2)
	ws := &wrapStore{Store: newMemoryStore(t)}
	ws.record = func(ctx context.Context, o []store.Outcome) ([]store.OutcomeResult, error) {
		if failing.Add(-1) >= 0 {
			return nil, errors.New("connection reset")
		}
		return ws.Store.RecordOutcomes(ctx, o)
	}
	cfg.Store = ws
	h := newHarness(t, mux, cfg)
	id := h.create(store.CreateParams{Kind: "noop"})[0]
	h.start()
	h.waitStatus(id, store.StatusSucceeded)
	waitFor(t, "stats", func() bool { return h.worker.Stats().Succeeded == 1 })
	if st := h.worker.Stats(); st.CommitErrors != 2 || st.LeaseLost != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestCancelRunningTask(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	mux := runtime.NewMux()
	mux.HandleFunc("long", func(ctx context.Context, job *runtime.Job) error {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- ctx.Err()
		return ctx.Err()
	})
	h := newHarness(t, mux, testConfig(t)).start()
	id := h.create(store.CreateParams{Kind: "long"})[0]
	recv(t, "the handler to start", started)

	if _, err := h.store.CancelTask(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, "the handler's context to end", stopped); !errors.Is(err, context.Canceled) {
		t.Fatalf("handler ctx.Err() = %v", err)
	}
	task := h.waitStatus(id, store.StatusCanceled)
	if !strings.Contains(task.LastError, "cancel requested") {
		t.Fatalf("last_error = %q", task.LastError)
	}
	waitFor(t, "stats", func() bool { return h.worker.Stats().Canceled == 1 })
	if a := h.attempts(id); len(a) != 1 || a[0].Outcome != store.OutcomeCanceled {
		t.Fatalf("attempts = %+v", a)
	}
}

// A worker whose heartbeats stop reaching the store loses the lease to the reaper; the
// outcome it records later is rejected, and the task's new owner decides.
func TestLeaseLostOutcomeRejected(t *testing.T) {
	t.Parallel()
	mem := newMemoryStore(t)
	ws := &wrapStore{Store: mem}
	ws.heartbeat = func(ctx context.Context, p store.HeartbeatParams) (*store.Task, error) {
		return nil, errors.New("network partition")
	}
	late := newGate()
	firstStarted := make(chan struct{}, 1)
	mux := runtime.NewMux()
	mux.HandleFunc("work", func(ctx context.Context, job *runtime.Job) error {
		if job.Task.AttemptCount == 1 {
			firstStarted <- struct{}{}
			<-late.ch // ignores ctx: a handler that keeps going after losing its lease
		}
		return nil
	})
	cfg := testConfig(t)
	cfg.Store = ws
	cfg.LeaseDuration = 200 * time.Millisecond
	cfg.HeartbeatInterval = 50 * time.Millisecond
	cfg.ReapInterval = -1 // the test reaps
	h := newHarness(t, mux, cfg).start()
	id := h.create(store.CreateParams{Kind: "work"})[0]
	recv(t, "attempt 1", firstStarted)

	waitFor(t, "the lease to expire and be reaped", func() bool {
		n, err := mem.ReapExpiredLeases(context.Background(), store.ReapParams{
			Limit: 10, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	// The same worker claims the task again; attempt 2 succeeds.
	task := h.waitStatus(id, store.StatusSucceeded)
	if task.AttemptCount != 2 {
		t.Fatalf("attempt_count = %d, want 2", task.AttemptCount)
	}
	late.open() // attempt 1 finishes now: its success must not count
	waitFor(t, "the late outcome to be rejected", func() bool { return h.worker.Stats().LeaseLost == 1 })
	h.stop()
	st := h.worker.Stats()
	if st.Succeeded != 1 || st.CommitErrors != 0 || st.InFlight != 0 {
		t.Fatalf("stats = %+v", st)
	}
	a := h.attempts(id)
	if len(a) != 2 || a[0].Outcome != store.OutcomeLeaseExpired || a[1].Outcome != store.OutcomeSucceeded {
		t.Fatalf("attempts = %+v", a)
	}
}

// When a heartbeat reports the lease lost, the handler's context is cancelled and
// nothing is recorded for that attempt.
func TestLeaseLostHeartbeatCancelsHandler(t *testing.T) {
	t.Parallel()
	mem := newMemoryStore(t)
	ws := &wrapStore{Store: mem}
	var partitioned atomic.Bool
	partitioned.Store(true)
	ws.heartbeat = func(ctx context.Context, p store.HeartbeatParams) (*store.Task, error) {
		if partitioned.Load() {
			return nil, errors.New("network partition")
		}
		return mem.Heartbeat(ctx, p)
	}
	firstStarted := make(chan struct{}, 1)
	firstStopped := make(chan error, 1)
	mux := runtime.NewMux()
	mux.HandleFunc("work", func(ctx context.Context, job *runtime.Job) error {
		if job.Task.AttemptCount > 1 {
			return nil
		}
		firstStarted <- struct{}{}
		<-ctx.Done()
		firstStopped <- ctx.Err()
		return ctx.Err()
	})
	cfg := testConfig(t)
	cfg.Store = ws
	cfg.LeaseDuration = 200 * time.Millisecond
	cfg.HeartbeatInterval = 50 * time.Millisecond
	cfg.ReapInterval = -1
	// Only one slot: attempt 2 can run only after attempt 1 gave its slot back.
	cfg.Concurrency = 1
	h := newHarness(t, mux, cfg).start()
	id := h.create(store.CreateParams{Kind: "work", MaxAttempts: 5})[0]
	recv(t, "attempt 1", firstStarted)
	waitFor(t, "the lease to expire and be reaped", func() bool {
		n, err := mem.ReapExpiredLeases(context.Background(), store.ReapParams{
			Limit: 10, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	partitioned.Store(false) // the next heartbeat reaches the store and learns the truth

	if err := recv(t, "attempt 1's context to end", firstStopped); !errors.Is(err, context.Canceled) {
		t.Fatalf("ctx.Err() = %v", err)
	}
	task := h.waitStatus(id, store.StatusSucceeded)
	if task.AttemptCount != 2 {
		t.Fatalf("attempt_count = %d, want 2", task.AttemptCount)
	}
	h.stop()
	if st := h.worker.Stats(); st.LeaseLost != 1 || st.Succeeded != 1 || st.Retried != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	var running gauge
	g := newGate()
	mux := runtime.NewMux()
	mux.HandleFunc("work", func(ctx context.Context, job *runtime.Job) error {
		running.inc()
		defer running.dec()
		<-g.ch
		return nil
	})
	cfg := testConfig(t)
	cfg.Concurrency = 3
	cfg.CommitInterval = 50 * time.Millisecond // outcomes linger in the committer
	h := newHarness(t, mux, cfg)
	var params []store.CreateParams
	for range 6 {
		params = append(params, store.CreateParams{Kind: "work"})
	}
	ids := h.create(params...)
	h.start()
	waitFor(t, "3 running", func() bool { return running.cur.Load() == 3 })

	h.cancel()
	g.open() // the in-flight handlers finish during the grace period
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
		h.done = nil
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
	}
	// Everything claimed was recorded before Run returned; the rest was never claimed.
	succeeded := 0
	for _, id := range ids {
		switch task := h.get(id); task.Status {
		case store.StatusSucceeded:
			succeeded++
		case store.StatusPending:
			if task.AttemptCount != 0 {
				t.Errorf("pending task %s has attempt_count %d", id, task.AttemptCount)
			}
		default:
			t.Errorf("task %s is %s after shutdown", id, task.Status)
		}
	}
	st := h.worker.Stats()
	if succeeded < 3 || int64(succeeded) != st.Claimed || st.Succeeded != st.Claimed || st.InFlight != 0 {
		t.Fatalf("%d succeeded; stats %+v", succeeded, st)
	}
}

func TestShutdownGraceCancelsHandlers(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	mux := runtime.NewMux()
	mux.HandleFunc("long", func(ctx context.Context, job *runtime.Job) error {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- ctx.Err()
		return ctx.Err()
	})
	cfg := testConfig(t)
	cfg.ShutdownGrace = 50 * time.Millisecond
	cfg.BackoffBase, cfg.BackoffMax = time.Hour, time.Hour // a shutdown retry is due at once anyway
	h := newHarness(t, mux, cfg).start()
	id := h.create(store.CreateParams{Kind: "long"})[0]
	recv(t, "the handler", started)
	begin := time.Now()
	h.stop()
	if d := time.Since(begin); d < cfg.ShutdownGrace {
		t.Fatalf("Run returned after %s, before the grace period", d)
	}
	if err := recv(t, "the handler's context", stopped); !errors.Is(err, context.Canceled) {
		t.Fatalf("ctx.Err() = %v", err)
	}
	task := h.get(id)
	if task.Status != store.StatusPending || task.AttemptCount != 1 || !strings.Contains(task.LastError, "worker shut down before the handler finished") {
		t.Fatalf("task after shutdown = %+v", task)
	}
	if task.ScheduledFor.After(time.Now()) {
		t.Fatalf("a task interrupted by shutdown is due at %s, want now", task.ScheduledFor)
	}
}

func TestShutdownAbandonsStuckHandler(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	stuck := newGate()
	t.Cleanup(stuck.open)
	mux := runtime.NewMux()
	mux.HandleFunc("stuck", func(ctx context.Context, job *runtime.Job) error {
		started <- struct{}{}
		<-stuck.ch // ignores ctx
		return nil
	})
	cfg := testConfig(t)
	cfg.ShutdownGrace = -1 // cancel at once; the abandon bound is then 1s
	h := newHarness(t, mux, cfg).start()
	id := h.create(store.CreateParams{Kind: "stuck"})[0]
	recv(t, "the handler", started)
	h.stop() // returns (after the bound) although the handler never does
	if task := h.get(id); task.Status != store.StatusProcessing {
		t.Fatalf("abandoned task = %+v, want still PROCESSING (its lease will expire)", task)
	}
}

func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var trace []string
	record := func(s string) {
		mu.Lock()
		trace = append(trace, s)
		mu.Unlock()
	}
	mw := func(name string) runtime.Middleware {
		return func(next runtime.Handler) runtime.Handler {
			return runtime.HandlerFunc(func(ctx context.Context, job *runtime.Job) error {
				record(name + ">")
				err := next.Work(ctx, job)
				record("<" + name)
				return err
			})
		}
	}
	done := make(chan struct{})
	mux := runtime.NewMux()
	mux.Use(mw("a"), mw("b"))
	mux.HandleFunc("k", func(context.Context, *runtime.Job) error {
		record("handler")
		return nil
	})
	mux.Use(mw("c")) // applies to kinds registered before too
	mux.Use(func(next runtime.Handler) runtime.Handler {
		return runtime.HandlerFunc(func(ctx context.Context, job *runtime.Job) error {
			defer close(done)
			return next.Work(ctx, job)
		})
	})
	h := newHarness(t, mux, testConfig(t)).start()
	id := h.create(store.CreateParams{Kind: "k"})[0]
	h.waitStatus(id, store.StatusSucceeded)
	recv(t, "the middleware", done)
	mu.Lock()
	defer mu.Unlock()
	want := []string{"a>", "b>", "c>", "handler", "<c", "<b", "<a"}
	if !slices.Equal(trace, want) {
		t.Fatalf("trace = %v, want %v", trace, want)
	}
}

func TestManyTasks(t *testing.T) {
	t.Parallel()
	var done atomic.Int64
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
		done.Add(1)
		return nil
	})
	cfg := testConfig(t)
	cfg.Queues = map[string]int{"q1": 0, "q2": 5}
	h := newHarness(t, mux, cfg).start()
	var ids []uuid.UUID
	for i := range 20 {
		var params []store.CreateParams
		for j := range 25 {
			params = append(params, store.CreateParams{Kind: "noop", Queue: []string{"q1", "q2"}[(i+j)%2]})
		}
		ids = append(ids, h.create(params...)...)
	}
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
	h.stop()
	st := h.worker.Stats()
	if st.Succeeded != int64(len(ids)) || st.Claimed != int64(len(ids)) || done.Load() != int64(len(ids)) {
		t.Fatalf("stats = %+v, handled %d, want %d each", st, done.Load(), len(ids))
	}
}
