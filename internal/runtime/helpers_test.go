package runtime_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
	"github.com/rotaqueue/rota/internal/testutil/poll"
	"github.com/rotaqueue/rota/internal/testutil/testio"
)

// waitTimeout bounds every wait on a condition in these tests.
const waitTimeout = 10 * time.Second

// harness runs a worker against an in-memory store for one test.
type harness struct {
	t      *testing.T
	store  store.Store
	mux    *runtime.Mux
	worker *runtime.Worker
	cancel context.CancelFunc
	done   chan error
}

// testConfig is a Config tuned for fast tests: quick polls, backoffs, heartbeats.
func testConfig(t *testing.T) runtime.Config {
	return runtime.Config{
		WorkerID:          "test-worker",
		Concurrency:       10,
		PollInterval:      10 * time.Millisecond,
		LeaseDuration:     5 * time.Second,
		HeartbeatInterval: 20 * time.Millisecond,
		BackoffBase:       time.Millisecond,
		BackoffMax:        5 * time.Millisecond,
		CommitInterval:    time.Millisecond,
		ShutdownGrace:     5 * time.Second,
		Logger:            slog.New(slog.NewTextHandler(testio.TestOutput(t), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

func newMemoryStore(t *testing.T) store.Store {
	s := memory.New()
	t.Cleanup(s.Close)
	return s
}

// newHarness creates a worker; cfg.Store defaults to a fresh memory store and cfg.Mux
// to mux. Call start to run it.
func newHarness(t *testing.T, mux *runtime.Mux, cfg runtime.Config) *harness {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = newMemoryStore(t)
	}
	cfg.Mux = mux
	w, err := runtime.NewWorker(cfg)
	if err != nil {
		t.Fatalf("NewWorker: %v", err)
	}
	return &harness{t: t, store: cfg.Store, mux: mux, worker: w}
}

// start runs the worker until stop (or the end of the test).
func (h *harness) start() *harness {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.worker.Run(ctx) }()
	h.t.Cleanup(func() { h.stop() })
	return h
}

// stop ends Run and waits for it to return.
func (h *harness) stop() {
	h.t.Helper()
	if h.done == nil {
		return
	}
	h.cancel()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run returned %v", err)
		}
	case <-time.After(waitTimeout):
		h.t.Fatal("Run did not return after its context ended")
	}
	h.done = nil
}

func (h *harness) create(params ...store.CreateParams) []uuid.UUID {
	h.t.Helper()
	return createTasks(h.t, h.store, params...)
}

// createN creates n tasks made by p.
func (h *harness) createN(n int, p store.CreateParams) []uuid.UUID {
	h.t.Helper()
	return h.create(slices.Repeat([]store.CreateParams{p}, n)...)
}

func createTasks(t *testing.T, s store.Store, params ...store.CreateParams) []uuid.UUID {
	t.Helper()
	res, err := s.CreateTasks(context.Background(), params)
	if err != nil {
		t.Fatalf("CreateTasks: %v", err)
	}
	ids := make([]uuid.UUID, len(res))
	for i, r := range res {
		ids[i] = r.Task.ID
	}
	return ids
}

func (h *harness) get(id uuid.UUID) *store.Task {
	h.t.Helper()
	task, err := h.store.GetTask(context.Background(), id)
	if err != nil {
		h.t.Fatalf("GetTask: %v", err)
	}
	return task
}

// waitStatus polls until the task has status, and returns it.
func (h *harness) waitStatus(id uuid.UUID, status store.Status) *store.Task {
	h.t.Helper()
	var last *store.Task
	waitFor(h.t, "task "+id.String()+" to be "+string(status), func() bool {
		last = h.get(id)
		return last.Status == status
	})
	return last
}

func (h *harness) attempts(id uuid.UUID) []store.Attempt {
	h.t.Helper()
	a, err := h.store.ListAttempts(context.Background(), id)
	if err != nil {
		h.t.Fatalf("ListAttempts: %v", err)
	}
	return a
}

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, waitTimeout, 2*time.Millisecond, cond)
}

// recv waits for a value on ch.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// gauge tracks how many of something run at once, and the most ever seen.
type gauge struct {
	cur, peak atomic.Int64
}

func (g *gauge) inc() {
	n := g.cur.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) dec() { g.cur.Add(-1) }

// gate blocks handlers until it is opened.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// wrapStore overrides some Store methods for fault injection and observation.
type wrapStore struct {
	store.Store
	claim     func(ctx context.Context, p store.ClaimParams) ([]*store.Task, error)
	heartbeat func(ctx context.Context, p store.HeartbeatParams) (*store.Task, error)
	record    func(ctx context.Context, o []store.Outcome) ([]store.OutcomeResult, error)
}

func (w *wrapStore) ClaimTasks(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	if w.claim != nil {
		return w.claim(ctx, p)
	}
	return w.Store.ClaimTasks(ctx, p)
}

func (w *wrapStore) Heartbeat(ctx context.Context, p store.HeartbeatParams) (*store.Task, error) {
	if w.heartbeat != nil {
		return w.heartbeat(ctx, p)
	}
	return w.Store.Heartbeat(ctx, p)
}

// HeartbeatMany goes through the heartbeat override, lease by lease, when one is set.
func (w *wrapStore) HeartbeatMany(ctx context.Context, p store.HeartbeatManyParams) ([]store.HeartbeatResult, error) {
	if w.heartbeat == nil {
		return w.Store.HeartbeatMany(ctx, p)
	}
	return store.HeartbeatEach(ctx, p, w.heartbeat)
}

func (w *wrapStore) RecordOutcomes(ctx context.Context, o []store.Outcome) ([]store.OutcomeResult, error) {
	if w.record != nil {
		return w.record(ctx, o)
	}
	return w.Store.RecordOutcomes(ctx, o)
}
