package runtime_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// A handler cancelled because its worker shut down did not fail: the attempt is
// recorded, but it does not use up the task's budget, so a task on its last attempt is
// not DEAD after a deploy and the next worker completes it.
func TestShutdownOnLastAttemptReleasesTheTask(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		started := make(chan struct{}, 1)
		var runs atomic.Int32
		mux := runtime.NewMux()
		mux.HandleFunc("deploy", func(ctx context.Context, job *runtime.Job) error {
			if runs.Add(1) == 1 {
				started <- struct{}{}
				<-ctx.Done() // still running when the grace period ends
				return ctx.Err()
			}
			return nil
		})
		cfg := testConfig(t)
		cfg.Store = st
		cfg.ShutdownGrace = 50 * time.Millisecond
		first := newHarness(t, mux, cfg).start()
		id := first.create(store.CreateParams{Kind: "deploy", MaxAttempts: 1})[0]
		recv(t, "the first run", started)
		first.stop()

		task := first.get(id)
		if task.Status != store.StatusPending || task.AttemptCount != 1 || task.MaxAttempts != 2 {
			t.Fatalf("task after shutdown: status %s, attempts %d of %d; want PENDING, 1 of 2",
				task.Status, task.AttemptCount, task.MaxAttempts)
		}
		if task.ScheduledFor.After(time.Now()) {
			t.Fatalf("released task is due at %s, want now", task.ScheduledFor)
		}
		a := first.attempts(id)
		if len(a) != 1 || a[0].Attempt != 1 || a[0].Outcome != store.OutcomeRetried ||
			!strings.Contains(a[0].Error, "worker shut down before the handler finished") {
			t.Fatalf("attempts after shutdown = %+v", a)
		}

		cfg.WorkerID = "second-worker"
		second := newHarness(t, mux, cfg).start()
		done := second.waitStatus(id, store.StatusSucceeded)
		if done.AttemptCount != 2 {
			t.Fatalf("succeeded task has attempt_count %d, want 2", done.AttemptCount)
		}
		a = second.attempts(id)
		if len(a) != 2 || a[1].Attempt != 2 || a[1].Outcome != store.OutcomeSucceeded || a[1].WorkerID != "second-worker" {
			t.Fatalf("attempts = %+v", a)
		}
	})
}
