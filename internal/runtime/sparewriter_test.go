package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// blockedFirstWrite is a store whose first RecordOutcomes call waits for its gate; it
// counts the calls started and flags any call that starts while the first one waits.
type blockedFirstWrite struct {
	*wrapStore
	gate       *gate
	calls      atomic.Int64
	firstHeld  atomic.Bool // the first call is waiting for the gate
	besideHeld atomic.Int64
}

func newBlockedFirstWrite(t *testing.T) *blockedFirstWrite {
	b := &blockedFirstWrite{wrapStore: &wrapStore{Store: newMemoryStore(t)}, gate: newGate()}
	b.record = func(ctx context.Context, o []store.Outcome) ([]store.OutcomeResult, error) {
		if b.calls.Add(1) == 1 {
			b.firstHeld.Store(true)
			<-b.gate.ch
			b.firstHeld.Store(false)
		} else if b.firstHeld.Load() {
			b.besideHeld.Add(1)
		}
		return b.Store.RecordOutcomes(ctx, o)
	}
	t.Cleanup(b.gate.open)
	return b
}

// TestSpareWriterWithoutBacklog: while no queue has a backlog (the last claim came back
// short), an outcome does not wait for the write in flight: a second write starts beside
// it. Before, the committer wrote one batch at a time, so the second task's success
// waited for the first one's write, however long.
func TestSpareWriterWithoutBacklog(t *testing.T) {
	t.Parallel()
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	st := newBlockedFirstWrite(t)
	cfg.Store = st
	h := newHarness(t, mux, cfg).start()

	first := h.create(store.CreateParams{Kind: "noop"})[0]
	waitFor(t, "the first outcome write to start", st.firstHeld.Load)
	second := h.create(store.CreateParams{Kind: "noop"})[0]
	h.waitStatus(second, store.StatusSucceeded) // written while the first write waits
	if !st.firstHeld.Load() {
		t.Fatal("the first write ended before its gate opened")
	}
	st.gate.open()
	h.waitStatus(first, store.StatusSucceeded)
}

// TestOneWriterUnderBacklog: while a queue has a backlog (claims come back full, or find
// no free slot), outcomes wait for the write in flight and go together in the next one,
// as they always did: a drain keeps one writer.
func TestOneWriterUnderBacklog(t *testing.T) {
	t.Parallel()
	var started atomic.Int64
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
		started.Add(1)
		return nil
	})
	cfg := testConfig(t)
	// Two slots and room for two queued outcomes: with the first write held, the next
	// batch waits and outcomes queue until handlers wait to hand theirs over, holding
	// both slots, so every claim after finds no free slot (a backlog) until the gate opens.
	cfg.Concurrency, cfg.CommitBatch = 2, 2
	st := newBlockedFirstWrite(t)
	cfg.Store = st
	h := newHarness(t, mux, cfg)
	ids := h.createN(40, store.CreateParams{Kind: "noop"})
	h.start()
	waitFor(t, "six handlers to run while the first write is held",
		func() bool { return started.Load() >= 6 && st.firstHeld.Load() })
	st.gate.open()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
	if n := st.besideHeld.Load(); n > 0 {
		t.Fatalf("%d writes started beside the held first one while the queue had a backlog", n)
	}
}

// TestNoSpareWriterBesideALargeWrite: a second write starts only beside a small one. A
// large write in flight says the database is slow to write (batches grow with a write's
// time), and there a second statement costs more than the wait it saves.
func TestNoSpareWriterBesideALargeWrite(t *testing.T) {
	t.Parallel()
	var started atomic.Int64
	release := newGate()
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error {
		started.Add(1)
		<-release.ch
		return nil
	})
	cfg := testConfig(t)
	// One claim takes the 20 tasks (short of its ask: no backlog), and their outcomes
	// go in one write: the batch waits for every running handler.
	cfg.Concurrency, cfg.CommitInterval = 30, time.Hour
	st := newBlockedFirstWrite(t)
	cfg.Store = st
	h := newHarness(t, mux, cfg)
	ids := h.createN(20, store.CreateParams{Kind: "noop"})
	h.start()
	waitFor(t, "20 handlers to start", func() bool { return started.Load() == 20 })
	release.open()
	waitFor(t, "the write of the 20 outcomes to start", st.firstHeld.Load)
	ids = append(ids, h.create(store.CreateParams{Kind: "noop"})...)
	waitFor(t, "the 21st handler to run", func() bool { return started.Load() == 21 })
	st.gate.open()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
	if n := st.besideHeld.Load(); n > 0 {
		t.Fatalf("%d writes started beside a held write of 20 outcomes", n)
	}
	if n := st.calls.Load(); n != 2 {
		t.Fatalf("%d writes, want 2 (the 20 outcomes, then the 21st)", n)
	}
}
