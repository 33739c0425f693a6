package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// TestIdleQueuesCostOneStatementPerPoll is issue #12 item 9 (poll mode): a worker serving
// 50 idle queues looks for work with one NextDue statement per poll interval, not a claim
// per queue per interval (before: 50 claims a round, growing with queues x workers). A
// task that comes due in an idle queue, which no notification announces, still runs.
func TestIdleQueuesCostOneStatementPerPoll(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		counted := &countingStore{Store: st}
		mux := runtime.NewMux()
		ran := make(chan struct{}, 1)
		mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
			ran <- struct{}{}
			return nil
		})
		cfg := testConfig(t)
		cfg.Store = counted
		cfg.Queues = manyQueues(50)
		h := newHarness(t, mux, cfg).start()

		const rounds = 30
		waitFor(t, "30 poll rounds (or the claims of many)", func() bool {
			return counted.nextDue.Load() >= rounds || counted.claims.Load() > 10*50
		})
		// One claim per queue at start; then none while nothing is due.
		if n := counted.claims.Load(); n > 50 {
			t.Fatalf("%d claims by a worker with 50 idle queues over %d poll rounds, want at most 50 (one each at start)", n, counted.nextDue.Load())
		}

		id := h.create(store.CreateParams{Queue: "q37", Kind: "noop", ScheduledFor: time.Now().Add(50 * time.Millisecond)})[0]
		recv(t, "the delayed task to run", ran)
		h.waitStatus(id, store.StatusSucceeded)
	})
}
