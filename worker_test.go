package rota_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota"
)

// startWorker runs a quick-polling worker for mux on c until the test ends.
func startWorker(t *testing.T, c testClient, mux *rota.Mux) *rota.Worker {
	t.Helper()
	w, err := c.NewWorker(rota.WorkerConfig{
		Mux:               mux,
		Queues:            map[string]int{"default": 4},
		PollInterval:      20 * time.Millisecond,
		LeaseDuration:     5 * time.Second,
		HeartbeatInterval: 50 * time.Millisecond,
		BackoffBase:       time.Millisecond,
		BackoffMax:        5 * time.Millisecond,
		ShutdownGrace:     time.Second,
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("NewWorker: %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Worker.Run: %v", err)
		}
	})
	return w
}

// waitStatus polls the task until it has status want, failing t after a deadline.
func waitStatus(t *testing.T, ctx context.Context, c testClient, id uuid.UUID, want rota.Status) *rota.Task {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		task, err := c.Get(ctx, id)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if task.Status == want {
			return task
		}
		if time.Now().After(deadline) || (task.Status.Terminal() && task.Status != want) {
			t.Fatalf("task %s is %s (last error %q), want %s", id, task.Status, task.LastError, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventually polls cond until it holds, failing t after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

func TestWorkerRunsTasks(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		var runs atomic.Int64
		mux := rota.NewMux()
		mux.HandleFunc("ok", func(ctx context.Context, job *rota.Job) error {
			runs.Add(1)
			return nil
		})
		w := startWorker(t, c, mux)

		tasks, err := c.EnqueueMany(ctx, []rota.EnqueueParams{{Kind: "ok"}, {Kind: "ok"}, {Kind: "ok"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			done := waitStatus(t, ctx, c, task.ID, rota.StatusSucceeded)
			if done.AttemptCount != 1 || done.CompletedAt == nil || done.WorkerID != w.ID() {
				t.Errorf("task = attempts %d, completed %v, worker %q; want 1, set, %q", done.AttemptCount, done.CompletedAt, done.WorkerID, w.ID())
			}
			attempts, err := c.Attempts(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(attempts) != 1 || attempts[0].Outcome != rota.OutcomeSucceeded || attempts[0].WorkerID != w.ID() {
				t.Errorf("Attempts = %+v, want one SUCCEEDED attempt by %s", attempts, w.ID())
			}
		}
		// A finished task can be neither canceled nor replayed.
		if _, err := c.Cancel(ctx, tasks[0].ID); !errors.Is(err, rota.ErrIllegalTransition) {
			t.Errorf("Cancel of a SUCCEEDED task: err = %v, want ErrIllegalTransition", err)
		}
		if _, err := c.Replay(ctx, tasks[0].ID); !errors.Is(err, rota.ErrIllegalTransition) {
			t.Errorf("Replay of a SUCCEEDED task: err = %v, want ErrIllegalTransition", err)
		}
		// The worker counts an outcome just after the store records it.
		eventually(t, "worker Stats count 3 claimed and succeeded", func() bool {
			st := w.Stats()
			return st.Succeeded == 3 && st.Claimed == 3
		})
		if n := runs.Load(); n != 3 {
			t.Errorf("handler ran %d times, want 3", n)
		}
	})
}

func TestWorkerFailures(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		var healed atomic.Bool
		mux := rota.NewMux()
		mux.HandleFunc("permanent", func(ctx context.Context, job *rota.Job) error {
			if healed.Load() {
				return nil
			}
			return rota.Permanent(errors.New("bad customer"))
		})
		mux.HandleFunc("flaky", func(ctx context.Context, job *rota.Job) error {
			return errors.New("try again")
		})
		mux.HandleFunc("slow", func(ctx context.Context, job *rota.Job) error {
			<-ctx.Done()
			return ctx.Err()
		})
		startWorker(t, c, mux)

		// A permanent error fails the task at once and leaves a dead letter.
		perm, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "permanent", MaxAttempts: 5})
		if err != nil {
			t.Fatal(err)
		}
		failed := waitStatus(t, ctx, c, perm.ID, rota.StatusFailed)
		if failed.AttemptCount != 1 || !strings.Contains(failed.LastError, "bad customer") {
			t.Errorf("failed task: attempts %d, last error %q; want 1, bad customer", failed.AttemptCount, failed.LastError)
		}
		// Retryable errors run until the attempts are exhausted.
		flaky, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "flaky", MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		dead := waitStatus(t, ctx, c, flaky.ID, rota.StatusDead)
		if dead.AttemptCount != 3 {
			t.Errorf("dead task: attempts %d, want 3", dead.AttemptCount)
		}
		attempts, err := c.Attempts(ctx, flaky.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) != 3 || attempts[0].Outcome != rota.OutcomeRetried || attempts[2].Outcome != rota.OutcomeDead {
			t.Errorf("Attempts = %+v, want RETRIED, RETRIED, DEAD", attempts)
		}

		letters, _, err := c.DeadLetters(ctx, rota.DeadLetterParams{})
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[uuid.UUID]rota.Status{}
		for _, l := range letters {
			reasons[l.TaskID] = l.Reason
		}
		if len(letters) != 2 || reasons[perm.ID] != rota.StatusFailed || reasons[flaky.ID] != rota.StatusDead {
			t.Errorf("DeadLetters = %+v, want FAILED for %s and DEAD for %s", letters, perm.ID, flaky.ID)
		}

		// Replaying runs the task again.
		healed.Store(true)
		if _, err := c.Replay(ctx, perm.ID); err != nil {
			t.Fatalf("Replay: %v", err)
		}
		waitStatus(t, ctx, c, perm.ID, rota.StatusSucceeded)

		// Canceling a running task cancels its handler's context.
		slow, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, ctx, c, slow.ID, rota.StatusProcessing)
		if _, err := c.Cancel(ctx, slow.ID); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		waitStatus(t, ctx, c, slow.ID, rota.StatusCanceled)

		// A task's own timeout bounds each attempt.
		timed, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "slow", Timeout: time.Second, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := waitStatus(t, ctx, c, timed.ID, rota.StatusDead); !strings.Contains(got.LastError, "timed out") {
			t.Errorf("timed-out task: last error %q, want it to say it timed out", got.LastError)
		}
	})
}

func TestNewWorkerInvalid(t *testing.T) {
	t.Parallel()
	c := rota.NewMemoryClient()
	defer c.Close()
	if _, err := c.NewWorker(rota.WorkerConfig{}); !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("NewWorker without a Mux: err = %v, want ErrInvalid", err)
	}
	if _, err := c.NewWorker(rota.WorkerConfig{Mux: rota.NewMux(), Queues: map[string]int{"bad queue": 1}}); !errors.Is(err, rota.ErrInvalid) {
		t.Errorf("NewWorker with a bad queue: err = %v, want ErrInvalid", err)
	}
}

func TestRegisterBuiltins(t *testing.T) {
	t.Parallel()
	mux := rota.NewMux()
	rota.RegisterBuiltins(mux, rota.BuiltinsConfig{})
	got := strings.Join(mux.Kinds(), ",")
	for _, kind := range []string{"noop", "sleep", "fail", "http", "echo"} {
		if !strings.Contains(","+got+",", ","+kind+",") {
			t.Errorf("Kinds() = %s, want it to include %s", got, kind)
		}
	}
}

func TestPermanentAndRetryAfter(t *testing.T) {
	t.Parallel()
	base := errors.New("boom")
	if err := rota.Permanent(base); !rota.IsPermanent(err) || !errors.Is(err, base) {
		t.Errorf("Permanent(base): IsPermanent %v, Is(base) %v; want both true", rota.IsPermanent(err), errors.Is(err, base))
	}
	if rota.IsPermanent(base) || rota.IsPermanent(rota.RetryAfter(time.Second, base)) {
		t.Errorf("IsPermanent is true for a retryable error")
	}
	if err := rota.RetryAfter(time.Second, base); !errors.Is(err, base) {
		t.Errorf("RetryAfter does not wrap its error")
	}
}

// TestHandlerOutput: a handler's Job.SetOutput is the task's Output, as Client.Get and
// Client.List show it, on both clients.
func TestHandlerOutput(t *testing.T) {
	t.Parallel()
	eachClient(t, func(t *testing.T, c testClient) {
		ctx := testContext(t)
		mux := rota.NewMux()
		mux.HandleFunc("sum", func(ctx context.Context, job *rota.Job) error {
			var nums []int
			if err := json.Unmarshal(job.Task.Payload, &nums); err != nil {
				return rota.Permanent(err)
			}
			total := 0
			for _, n := range nums {
				total += n
			}
			return job.SetOutput(map[string]int{"total": total})
		})
		startWorker(t, c, mux)
		task, err := c.Enqueue(ctx, rota.EnqueueParams{Kind: "sum", Payload: []int{1, 2, 3}})
		if err != nil {
			t.Fatal(err)
		}
		if task.Output != nil {
			t.Fatalf("a new task has output %s", task.Output)
		}
		done := waitStatus(t, ctx, c, task.ID, rota.StatusSucceeded)
		var got struct{ Total int }
		if err := json.Unmarshal(done.Output, &got); err != nil || got.Total != 6 {
			t.Fatalf("Get: output %s (%v), want {\"total\": 6}", done.Output, err)
		}
		listed, _, err := c.List(ctx, rota.ListParams{Kind: "sum"})
		if err != nil || len(listed) != 1 || !strings.Contains(string(listed[0].Output), "6") {
			t.Fatalf("List: %v, %v; want the task with its output", listed, err)
		}
		if err := (&rota.Job{}).SetOutput(strings.Repeat("x", rota.MaxOutputBytes)); !errors.Is(err, rota.ErrInvalidOutput) {
			t.Fatalf("SetOutput over MaxOutputBytes: %v, want ErrInvalidOutput", err)
		}
	})
}
