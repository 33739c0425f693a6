package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// A task created while the queue's only loop is in a claim starts without waiting for
// that claim to end: a wake claimer (wakeclaim.go) answers the wake-up. Before, the
// wake-up waited for the loop's claim, and under a steady load every task queued behind
// the claim in flight (the test holds that claim until the second task has started).
func TestWakeUpDuringAClaimIsAnsweredAtOnce(t *testing.T) {
	inner := newMemoryStore(t)
	var armed atomic.Bool
	var claims atomic.Int32
	blocked := make(chan struct{}, 1)
	release := newGate()
	defer release.open()
	wrapped := &wrapStore{Store: inner}
	wrapped.claim = func(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
		tasks, err := inner.ClaimTasks(ctx, p)
		defer claims.Add(1)
		if len(tasks) > 0 && armed.CompareAndSwap(true, false) {
			blocked <- struct{}{}
			<-release.ch // this claim is still in flight
		}
		return tasks, err
	}
	started := make(chan uuid.UUID, 2)
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(_ context.Context, job *runtime.Job) error {
		started <- job.Task.ID
		return nil
	})
	cfg := testConfig(t)
	cfg.Store = wrapped
	cfg.FetchLoops = 1
	cfg.PollInterval = time.Hour // only the wake-ups of the creates make claims
	h := newHarness(t, mux, cfg).start()

	// The claim a worker makes on start (of nothing) is over: the queue is idle.
	poll.Until(t, "the first claim", waitTimeout, time.Millisecond, func() bool { return claims.Load() > 0 })
	armed.Store(true)
	first := h.create(store.CreateParams{Kind: "noop"})[0]
	select {
	case <-blocked:
	case <-time.After(waitTimeout):
		t.Fatal("the first task was never claimed")
	}
	second := h.create(store.CreateParams{Kind: "noop"})[0]
	select {
	case id := <-started:
		if id != second {
			t.Fatalf("handler started for %s, want the second task %s (the first one's claim is held)", id, second)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("the second task did not start while the first task's claim (%s) was in flight", first)
	}
	release.open()
	if id := <-started; id != first {
		t.Fatalf("handler started for %s, want the first task %s", id, first)
	}
}
