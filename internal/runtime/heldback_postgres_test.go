package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// A claim held back by a queue setting (heldback.go) leaves due tasks: the worker must
// neither claim the queue in a loop the limit turns away every time, nor wait for the
// next poll to claim it again once the limit lets more through.

// claimCountingStore counts the worker's claims and the ones a setting held back.
func claimCountingStore(st store.Store, claims, held *atomic.Int64) store.Store {
	return &wrapStore{Store: st, claim: func(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
		tasks, err := st.ClaimTasks(ctx, p)
		claims.Add(1)
		if p.Report != nil && p.Report.HeldBack != "" {
			held.Add(1)
		}
		return tasks, err
	}}
}

func limitedStore(t *testing.T, queue string, patch store.QueuePatch) *postgres.Store {
	t.Helper()
	st := postgres.New(pgtest.NewPoolConns(t, 8))
	t.Cleanup(st.Close)
	if _, err := st.UpdateQueueSettings(context.Background(), queue, patch); err != nil {
		t.Fatal(err)
	}
	return st
}

// With concurrency 1 and a running task that blocks, the queue's other due tasks are
// held back. The old worker treated the short claim as an idle queue, which the idle
// watcher found due at its next poll (10 ms here): a claim every poll, for nothing.
func TestHeldBackQueueIsNotClaimedInALoopPostgres(t *testing.T) {
	one := 1
	st := limitedStore(t, store.DefaultQueue, store.QueuePatch{Concurrency: &store.Change[int]{To: &one}})
	var claims, held atomic.Int64
	release := newGate()
	var started atomic.Int64
	mux := runtime.NewMux()
	mux.HandleFunc("block", func(ctx context.Context, _ *runtime.Job) error {
		if started.Add(1) == 1 {
			<-release.ch
		}
		return nil
	})
	cfg := testConfig(t)
	cfg.Store = claimCountingStore(st, &claims, &held)
	h := newHarness(t, mux, cfg).start()
	t.Cleanup(release.open) // before the worker's stop, when the test fails early
	ids := h.create(store.CreateParams{Kind: "block"}, store.CreateParams{Kind: "block"}, store.CreateParams{Kind: "block"})
	waitFor(t, "the first task to start", func() bool { return started.Load() == 1 })
	waitFor(t, "a claim held back by concurrency", func() bool { return held.Load() > 0 })

	before := claims.Load()
	time.Sleep(time.Second) // 100 polls of the idle watcher
	if n := claims.Load() - before; n > 10 {
		t.Fatalf("%d claims in a second while the queue's only slot was taken: a loop against the limit", n)
	}
	if started.Load() != 1 {
		t.Fatalf("%d tasks started with concurrency 1", started.Load())
	}
	// Once the running task ends, the others run (the committed outcome wakes the
	// fetcher; heldRetry bounds the wait otherwise).
	release.open()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
}

// With a rate of 2 per second and a poll interval of a minute, only the report's
// RetryIn can have the worker claim again before the minute is out: the six tasks all
// run within a few seconds, two per window.
func TestRateLimitedQueueIsClaimedWhenTheWindowAdmitsPostgres(t *testing.T) {
	st := limitedStore(t, store.DefaultQueue, store.QueuePatch{
		Rate: &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: 2, PerSeconds: 1}}})
	var claims, held atomic.Int64
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	cfg.PollInterval = time.Minute
	cfg.Store = claimCountingStore(st, &claims, &held)
	h := newHarness(t, mux, cfg)
	var params []store.CreateParams
	for range 6 {
		params = append(params, store.CreateParams{Kind: "noop"})
	}
	ids := h.create(params...)
	h.start()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded) // within waitTimeout, far less than the poll interval
	}
	if held.Load() == 0 {
		t.Fatal("no claim was held back by the rate")
	}
	if n := claims.Load(); n > 20 {
		t.Fatalf("%d claims for 6 tasks at 2 per second: the worker did not wait for the window", n)
	}
}

// With concurrency equal to the worker's own, a drain is claimed without claims the
// limit turns away: a finished task counts against the limit until its outcome is
// written, so while the limit bites the worker claims only for slots whose outcomes are
// written (roomForClaim). The old worker claimed for every free slot and had most of
// its claims held back (measured: about 480 of 600 claims in a drain of 20,000), each a
// round trip under the queue's lock for nothing.
func TestDrainAtTheConcurrencyLimitIsNotHeldBackPostgres(t *testing.T) {
	const tasks, slots = 1000, 10
	st := limitedStore(t, store.DefaultQueue, store.QueuePatch{Concurrency: &store.Change[int]{To: new(slots)}})
	var claims, held atomic.Int64
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	cfg.Concurrency = slots
	cfg.Store = claimCountingStore(st, &claims, &held)
	drainNoops(newHarness(t, mux, cfg), tasks)
	// A few are expected: the first claim that finds the limit (and one each time the
	// worker stops watching, concurrencyHeldFor after the last).
	if n, c := held.Load(), claims.Load(); n*10 > c {
		t.Fatalf("%d of %d claims were held back by the concurrency limit", n, c)
	}
}

// With one claiming loop (large claims) and concurrency equal to the worker's own, the
// worker claims at most half its slots at once while the limit bites (roomForClaim), so
// that one half is claimed while the other half's outcomes are written. The old worker
// claimed every slot whose outcome was written: with handlers that return at once, all
// of them, so its next claim waited for the whole batch's commit. Claims asking for more
// than half come only before the worker has seen the limit (a held claim), which it
// forgets concurrencyHeldFor after the last.
func TestOneLoopClaimsHalfTheSlotsAtTheConcurrencyLimitPostgres(t *testing.T) {
	const tasks, slots = 600, 10
	st := limitedStore(t, store.DefaultQueue, store.QueuePatch{Concurrency: &store.Change[int]{To: new(slots)}})
	var held, whole, claims atomic.Int64
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(context.Context, *runtime.Job) error { return nil })
	cfg := testConfig(t)
	cfg.Concurrency = slots
	cfg.FetchLoops = 1
	cfg.Store = &wrapStore{Store: st, claim: func(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
		tasks, err := st.ClaimTasks(ctx, p)
		claims.Add(1)
		if p.Limit > slots/2 {
			whole.Add(1)
		}
		if p.Report != nil && p.Report.HeldBack != "" {
			held.Add(1)
		}
		return tasks, err
	}}
	drainNoops(newHarness(t, mux, cfg), tasks)
	// Each hold is followed by claims of at most half for concurrencyHeldFor; before the
	// first, and after each such while, a claim or two may ask for every slot.
	if w, n, c := whole.Load(), held.Load(), claims.Load(); w > 2*(n+1) {
		t.Fatalf("%d of %d claims asked for more than half the slots, with %d held back", w, c, n)
	}
}

// drainNoops creates n noop tasks, starts h's worker and waits for every task to succeed.
func drainNoops(h *harness, n int) {
	h.t.Helper()
	ids := h.createN(n, store.CreateParams{Kind: "noop"})
	h.start()
	for _, id := range ids {
		h.waitStatus(id, store.StatusSucceeded)
	}
}
