package runtime_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// batchCountingStore records the size of every HeartbeatMany call and counts single
// Heartbeat calls.
type batchCountingStore struct {
	store.Store
	mu      sync.Mutex
	batches []int
	singles atomic.Int64
}

func (s *batchCountingStore) Heartbeat(ctx context.Context, p store.HeartbeatParams) (*store.Task, error) {
	s.singles.Add(1)
	return s.Store.Heartbeat(ctx, p)
}

func (s *batchCountingStore) HeartbeatMany(ctx context.Context, p store.HeartbeatManyParams) ([]store.HeartbeatResult, error) {
	s.mu.Lock()
	s.batches = append(s.batches, len(p.Leases))
	s.mu.Unlock()
	return s.Store.HeartbeatMany(ctx, p)
}

func (s *batchCountingStore) sizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

// TestHeartbeatsGoInBatches: a worker running 600 tasks extends their leases in calls
// of at most 500 (runtime.heartbeatBatch), never one call per task, and keeps every
// lease alive well past its duration.
func TestHeartbeatsGoInBatches(t *testing.T) {
	t.Parallel()
	const n = 600
	st := &batchCountingStore{Store: newMemoryStore(t)}
	release := newGate()
	var started atomic.Int64
	mux := runtime.NewMux()
	mux.HandleFunc("long", func(ctx context.Context, job *runtime.Job) error {
		started.Add(1)
		<-release.ch
		return nil
	})
	cfg := testConfig(t)
	cfg.Store = st
	cfg.Concurrency = n
	cfg.LeaseDuration = time.Second
	cfg.HeartbeatInterval = 250 * time.Millisecond
	h := newHarness(t, mux, cfg).start()
	ids := h.createN(n, store.CreateParams{Kind: "long"})
	waitFor(t, "every task to start", func() bool { return started.Load() == n })
	// Two lease durations: every lease must have been extended a few times over.
	time.Sleep(2 * cfg.LeaseDuration)
	sizes := st.sizes()
	total, most := 0, 0
	for _, size := range sizes {
		total += size
		most = max(most, size)
	}
	if most > 500 || most < 100 || st.singles.Load() != 0 {
		t.Fatalf("heartbeat calls of %v leases and %d single heartbeats; want batches of at most 500, no singles", sizes, st.singles.Load())
	}
	if total < 2*n {
		t.Fatalf("%d leases extended in %d calls, want every task's at least twice", total, len(sizes))
	}
	if stats := h.worker.Stats(); stats.LeaseLost != 0 || stats.HeartbeatErrors != 0 {
		t.Fatalf("stats %+v: no lease may be lost", stats)
	}
	release.open()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
}
