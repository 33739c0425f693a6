package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// slowFirstWrite is a store whose first RecordOutcomes call waits until release closes.
type slowFirstWrite struct {
	store.Store
	calls, inFlight, maxInFlight atomic.Int64
	release                      chan struct{}
}

func (s *slowFirstWrite) RecordOutcomes(ctx context.Context, outcomes []store.Outcome) ([]store.OutcomeResult, error) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.maxInFlight.Load(); n > m && !s.maxInFlight.CompareAndSwap(m, n); m = s.maxInFlight.Load() {
	}
	if s.calls.Add(1) == 1 {
		<-s.release
	}
	return s.Store.RecordOutcomes(ctx, outcomes)
}

// TestCommitterWritesTheNextBatchDuringASlowWrite: while one batch's write is slow (a
// commit's WAL flush, a lock), the outcomes that arrive meanwhile are written by a second
// write instead of waiting for the first to end.
func TestCommitterWritesTheNextBatchDuringASlowWrite(t *testing.T) {
	t.Parallel()
	st := &slowFirstWrite{Store: newMemoryStore(t), release: make(chan struct{})}
	mux := runtime.NewMux()
	mux.HandleFunc("work", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	cfg.Store = st
	h := newHarness(t, mux, cfg).start()
	defer close(st.release)

	first := h.create(store.CreateParams{Kind: "work"})[0]
	waitFor(t, "the first write to start", func() bool { return st.calls.Load() == 1 })
	second := h.create(store.CreateParams{Kind: "work"})[0]
	h.waitStatus(second, store.StatusSucceeded)
	if got := h.get(first).Status; got != store.StatusProcessing {
		t.Errorf("the first task is %s while its write is held, want PROCESSING", got)
	}
	if st.maxInFlight.Load() != 2 {
		t.Errorf("at most %d writes in flight, want 2", st.maxInFlight.Load())
	}
}
