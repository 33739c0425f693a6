package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/poll"
	"github.com/rotaqueue/rota/internal/testutil/testio"
)

// Issue 12 item 12: the help says a negative --reap-interval disables the reaper, and the
// documented -1 (no unit) is read as such, from the flag and from ROTA_REAP_INTERVAL.
func TestReapIntervalFlagValues(t *testing.T) {
	t.Setenv("ROTA_DATABASE_URL", "postgres://127.0.0.1:1/never-reached")
	t.Setenv("ROTA_REAP_INTERVAL", "")
	// Canceled: a worker that got past its flags stops before it starts.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	worker := func(args ...string) error {
		return run(ctx, append([]string{"worker"}, args...), io.Discard, io.Discard)
	}
	for _, ok := range [][]string{
		{"--reap-interval", "-1"}, {"--reap-interval=-1"}, {"--reap-interval", "-30"},
		{"--reap-interval", "-1s"}, {"--reap-interval", "0"}, {"--reap-interval", "250ms"},
	} {
		if err := worker(ok...); errors.Is(err, errUsage) {
			t.Errorf("rota worker %s: %v, want it accepted", strings.Join(ok, " "), err)
		}
	}
	for _, bad := range []string{"5", "abc", "-1x", "1.5"} {
		if err := worker("--reap-interval", bad); !errors.Is(err, errUsage) {
			t.Errorf("rota worker --reap-interval %s: %v, want a usage error", bad, err)
		}
	}
	t.Setenv("ROTA_REAP_INTERVAL", "-1")
	if err := worker(); errors.Is(err, errUsage) {
		t.Errorf("ROTA_REAP_INTERVAL=-1: %v, want it accepted", err)
	}
	t.Setenv("ROTA_REAP_INTERVAL", "soon")
	if err := worker(); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "ROTA_REAP_INTERVAL") {
		t.Errorf("ROTA_REAP_INTERVAL=soon: %v, want a usage error naming the variable", err)
	}
}

// Issue 12 item 12: `rota worker --reap-interval -1` starts, works tasks, and leaves an
// expired lease alone (another process reaps it); with the default interval, the same
// expired lease is reaped.
func TestWorkerReapIntervalNegativeDisablesReaper(t *testing.T) {
	url := pgtest.NewDatabase(t)
	st, closeStore := openTestStore(t, url)
	defer closeStore()
	ctx := context.Background()

	// A task whose worker died: PROCESSING, its lease expired a minute ago.
	stuck := createTask(t, st)
	if _, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: store.DefaultQueue, From: store.StatusPending,
		WorkerID: "dead-worker", Limit: 1, LeaseDuration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	expireLeases(t, url)

	w := startWorker(t, "--database-url", url, "--reap-interval", "-1")
	w.waitStarted(t)
	// It works tasks...
	done := createTask(t, st)
	poll.Until(t, "a task run by the --reap-interval -1 worker", 30*time.Second, 20*time.Millisecond, func() bool {
		return taskStatus(t, st, done.ID) == store.StatusSucceeded
	})
	// ...and leaves the expired lease alone for well over the default reaper's first
	// pass (at a tenth of its 5s interval).
	time.Sleep(1500 * time.Millisecond)
	if got := taskStatus(t, st, stuck.ID); got != store.StatusProcessing {
		t.Fatalf("the expired lease was reaped (%s) by a worker with --reap-interval -1", got)
	}
	if err := w.stop(); err != nil {
		t.Fatalf("worker --reap-interval -1: %v\n%s", err, w.logs)
	}

	// The default interval reaps it: the lease above was really expired.
	w = startWorker(t, "--database-url", url)
	w.waitStarted(t)
	poll.Until(t, "the expired lease reaped by a default worker", 30*time.Second, 20*time.Millisecond, func() bool {
		return taskStatus(t, st, stuck.ID) != store.StatusProcessing
	})
	if err := w.stop(); err != nil {
		t.Fatalf("worker: %v\n%s", err, w.logs)
	}
}

// workerRun is a `rota worker` running in this process.
type workerRun struct {
	logs   *testio.LockedBuffer
	cancel context.CancelFunc
	done   chan struct{}
	err    error // once done is closed
}

func startWorker(t *testing.T, args ...string) *workerRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &workerRun{logs: &testio.LockedBuffer{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.err = run(ctx, append([]string{"worker"}, args...), io.Discard, w.logs)
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// waitStarted waits for the worker's start line, failing at once if it exited instead.
func (w *workerRun) waitStarted(t *testing.T) {
	t.Helper()
	poll.Until(t, "worker started", 30*time.Second, 20*time.Millisecond, func() bool {
		select {
		case <-w.done:
			t.Fatalf("worker exited: %v\n%s", w.err, w.logs)
		default:
		}
		return strings.Contains(w.logs.String(), "worker started")
	})
}

func (w *workerRun) stop() error {
	w.cancel()
	<-w.done
	return w.err
}

func openTestStore(t *testing.T, url string) (*postgres.Store, func()) {
	t.Helper()
	pool, err := openPool(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	st := postgres.New(pool)
	return st, func() { st.Close(); pool.Close() }
}

func createTask(t *testing.T, st *postgres.Store) *store.Task {
	t.Helper()
	res, err := st.CreateTasks(context.Background(), []store.CreateParams{{Kind: "noop"}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Task
}

func taskStatus(t *testing.T, st *postgres.Store, id uuid.UUID) store.Status {
	t.Helper()
	task, err := st.GetTask(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return task.Status
}

func expireLeases(t *testing.T, url string) {
	t.Helper()
	pool, err := openPool(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(),
		`UPDATE rota.tasks SET lease_expires_at = now() - interval '1 minute' WHERE status = 'PROCESSING'`); err != nil {
		t.Fatal(err)
	}
}

// Issue 12 item 8: ROTA_HTTP_DENY_PRIVATE reaches the worker's http kind: a task calling
// a loopback server fails at once (FAILED, not retried), saying why, and the server is
// never called. A value that is no boolean stops the worker and dev.
func TestWorkerHTTPDenyPrivate(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	url := pgtest.NewDatabase(t)
	st, closeStore := openTestStore(t, url)
	defer closeStore()

	t.Setenv("ROTA_HTTP_DENY_PRIVATE", "yes")
	for _, args := range [][]string{{"worker", "--database-url", url}, {"dev", "--addr", "127.0.0.1:0"}} {
		if _, err := runCLI(t, args...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "ROTA_HTTP_DENY_PRIVATE") {
			t.Errorf("ROTA_HTTP_DENY_PRIVATE=yes rota %s: %v, want a usage error", args[0], err)
		}
	}

	t.Setenv("ROTA_HTTP_DENY_PRIVATE", "1")
	res, err := st.CreateTasks(context.Background(), []store.CreateParams{{Kind: "http",
		Payload: []byte(`{"url": "` + srv.URL + `/hook"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, "--database-url", url)
	w.waitStarted(t)
	var task *store.Task
	poll.Until(t, "the http task finished", 30*time.Second, 20*time.Millisecond, func() bool {
		task, err = st.GetTask(context.Background(), res[0].Task.ID)
		return err == nil && task.Status != store.StatusPending && task.Status != store.StatusProcessing
	})
	if task.Status != store.StatusFailed || !strings.Contains(task.LastError, "127.0.0.1 is a loopback address (refused by ROTA_HTTP_DENY_PRIVATE)") {
		t.Fatalf("task %s, last_error %q; want FAILED with the deny-private refusal", task.Status, task.LastError)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the loopback server was called %d times", n)
	}
	if err := w.stop(); err != nil {
		t.Fatalf("worker: %v\n%s", err, w.logs)
	}
}
