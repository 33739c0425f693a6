package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// newPostgresStore returns a store on a fresh migrated database of its own.
func newPostgresStore(t *testing.T) *postgres.Store {
	t.Helper()
	st := postgres.New(pgtest.NewPool(t))
	t.Cleanup(st.Close)
	return st
}

// abandonConfig is a worker config for the abandonment tests: a lease short enough to
// expire within the test, a quick reaper and a short abandon grace.
func abandonConfig(t *testing.T, st store.Store, id string, obs runtime.Observer) runtime.Config {
	cfg := testConfig(t)
	cfg.Store = st
	cfg.WorkerID = id
	cfg.LeaseDuration = 2 * time.Second
	cfg.HeartbeatInterval = 200 * time.Millisecond
	cfg.ReapInterval = 100 * time.Millisecond
	cfg.AbandonGrace = 200 * time.Millisecond
	cfg.Observer = obs
	return cfg
}

// metricSum adds up every series of the metric name in reg (0 when it has none).
func metricSum(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// stubbornHandler blocks its first attempt until release is opened, ignoring its
// context; later attempts succeed at once. It counts its runs and late returns.
type stubbornHandler struct {
	release  *gate
	started  chan struct{} // the first attempt is running
	runs     atomic.Int64
	returned chan struct{} // the first attempt returned
}

func newStubbornHandler() *stubbornHandler {
	return &stubbornHandler{release: newGate(), started: make(chan struct{}), returned: make(chan struct{})}
}

func (h *stubbornHandler) Work(_ context.Context, job *runtime.Job) error {
	h.runs.Add(1)
	if job.Task.AttemptCount > 1 {
		return nil
	}
	close(h.started)
	<-h.release.ch // ignores ctx: a runaway handler
	close(h.returned)
	return nil // a late "success" that must never be written
}

// runTwoWorkers starts two workers on st sharing one metrics registry.
func runTwoWorkers(t *testing.T, st store.Store, h runtime.Handler) (*prometheus.Registry, []*harness) {
	reg := prometheus.NewRegistry()
	obs := metrics.New(reg)
	var workers []*harness
	for _, id := range []string{"worker-a", "worker-b"} {
		mux := runtime.NewMux()
		mux.Handle("stubborn", h)
		workers = append(workers, newHarness(t, mux, abandonConfig(t, st, id, obs)).start())
	}
	return reg, workers
}

// abandonedRunning sums the workers' AbandonedRunning counts.
func abandonedRunning(workers []*harness) int64 {
	var n int64
	for _, w := range workers {
		n += w.worker.Stats().AbandonedRunning
	}
	return n
}

// TestRunawayHandlerIsAbandonedAndRetriedElsewherePostgres is issue #12 item 2: a
// handler that ignores its context past its 1 s timeout no longer holds its task
// PROCESSING forever. The worker abandons it AbandonGrace later and stops the heartbeats,
// the lease expires, a reaper retries the task, and it succeeds exactly once; the late
// return of the runaway handler writes nothing, and the abandonment is counted.
func TestRunawayHandlerIsAbandonedAndRetriedElsewherePostgres(t *testing.T) {
	st := newPostgresStore(t)
	h := newStubbornHandler()
	t.Cleanup(h.release.open)
	reg, workers := runTwoWorkers(t, st, h)
	id := createTasks(t, st, store.CreateParams{Kind: "stubborn", TimeoutSeconds: 1})[0]
	recv(t, "the first attempt to start", h.started)

	w := workers[0]
	task := w.waitStatus(id, store.StatusSucceeded)
	if task.AttemptCount != 2 {
		t.Errorf("attempt_count = %d, want 2 (the abandoned attempt and the retry)", task.AttemptCount)
	}
	if got := metricSum(t, reg, "rota_handlers_abandoned_total"); got != 1 {
		t.Errorf("rota_handlers_abandoned_total = %v, want 1", got)
	}
	if got := metricSum(t, reg, "rota_handlers_abandoned_running"); got != 1 {
		t.Errorf("rota_handlers_abandoned_running = %v, want 1 while the runaway handler runs", got)
	}

	// The runaway handler returns "success" at last: nothing may be written for it.
	h.release.open()
	recv(t, "the runaway handler to return", h.returned)
	waitFor(t, "the late return to be dropped", func() bool { return abandonedRunning(workers) == 0 })
	if got := metricSum(t, reg, "rota_handlers_abandoned_running"); got != 0 {
		t.Errorf("rota_handlers_abandoned_running = %v after the late return, want 0", got)
	}
	assertAttempts(t, w, id, store.OutcomeLeaseExpired, store.OutcomeSucceeded)
	if runs := h.runs.Load(); runs != 2 {
		t.Errorf("handler ran %d times, want 2", runs)
	}
	var succeeded int64
	for _, w := range workers {
		succeeded += w.worker.Stats().Succeeded
	}
	if succeeded != 1 {
		t.Errorf("workers recorded %d successes, want 1 (the late return must not be written)", succeeded)
	}
}

// TestRunawayHandlerIsAbandonedAfterCancelPostgres: a cancel request ends a running
// handler's context; one that ignores it is abandoned, and the reaper records CANCELED
// when the lease expires. The late return writes nothing.
func TestRunawayHandlerIsAbandonedAfterCancelPostgres(t *testing.T) {
	st := newPostgresStore(t)
	h := newStubbornHandler()
	t.Cleanup(h.release.open)
	reg, workers := runTwoWorkers(t, st, h)
	id := createTasks(t, st, store.CreateParams{Kind: "stubborn"})[0] // no timeout of its own: 15m
	recv(t, "the first attempt to start", h.started)
	if _, err := st.CancelTask(context.Background(), id); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}

	w := workers[0]
	w.waitStatus(id, store.StatusCanceled)
	if got := metricSum(t, reg, "rota_handlers_abandoned_total"); got != 1 {
		t.Errorf("rota_handlers_abandoned_total = %v, want 1", got)
	}
	h.release.open()
	recv(t, "the runaway handler to return", h.returned)
	waitFor(t, "the late return to be dropped", func() bool { return abandonedRunning(workers) == 0 })
	if task := w.get(id); task.Status != store.StatusCanceled {
		t.Errorf("status = %s after the late return, want CANCELED", task.Status)
	}
	assertAttempts(t, w, id, store.OutcomeLeaseExpired)
	if runs := h.runs.Load(); runs != 1 {
		t.Errorf("handler ran %d times, want 1", runs)
	}
}

// assertAttempts checks the task's attempt rows, in order, by outcome.
func assertAttempts(t *testing.T, h *harness, id uuid.UUID, want ...store.AttemptOutcome) {
	t.Helper()
	got := h.attempts(id)
	if len(got) != len(want) {
		t.Fatalf("attempts = %+v, want outcomes %v", got, want)
	}
	for i, a := range got {
		if a.Outcome != want[i] || a.Attempt != i+1 {
			t.Errorf("attempt %d = #%d %s, want #%d %s", i, a.Attempt, a.Outcome, i+1, want[i])
		}
	}
}
