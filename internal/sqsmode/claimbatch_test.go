package sqsmode

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// fakeClaims stands in for the store's claim: it records each statement's ids, claims
// every id not in refuse (in reverse order, so the test sees whose order wins), and can
// hold a statement until released.
type fakeClaims struct {
	mu         sync.Mutex
	statements [][]uuid.UUID
	refuse     map[uuid.UUID]bool
	err        error
	hold       chan struct{} // when set, the first statement waits for it to close
	held       store.ClaimReport
}

func (f *fakeClaims) claim(_ context.Context, ids []uuid.UUID) ([]*store.Task, store.ClaimReport, error) {
	f.mu.Lock()
	f.statements = append(f.statements, slices.Clone(ids))
	first, hold := len(f.statements) == 1, f.hold
	f.mu.Unlock()
	if first && hold != nil {
		<-hold
	}
	if f.err != nil {
		return nil, store.ClaimReport{}, f.err
	}
	var tasks []*store.Task
	seen := map[uuid.UUID]bool{}
	for _, id := range slices.Backward(ids) {
		if !f.refuse[id] && !seen[id] {
			seen[id] = true
			tasks = append(tasks, &store.Task{ID: id})
		}
	}
	return tasks, f.held, nil
}

func (f *fakeClaims) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.statements)
}

func newIDs(n int) []uuid.UUID {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
	}
	return ids
}

func taskIDs(tasks []*store.Task) []uuid.UUID {
	ids := make([]uuid.UUID, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return ids
}

// waitFor polls cond until it holds, failing t after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, 30*time.Second, time.Millisecond, cond)
}

func TestClaimsArrivingDuringAStatementShareTheNextOne(t *testing.T) {
	fake := &fakeClaims{hold: make(chan struct{}), refuse: map[uuid.UUID]bool{}}
	b := &claimBatcher{claim: fake.claim}
	first, later := newIDs(3), [][]uuid.UUID{newIDs(2), newIDs(4), newIDs(1)}
	fake.refuse[later[1][2]] = true // one id the store does not give

	results := make([][]*store.Task, 1+len(later))
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	wg.Go(func() { results[0], _, errs[0] = b.do(context.Background(), first) })
	waitFor(t, "the first statement", func() bool { return fake.count() == 1 })
	for i, ids := range later {
		wg.Go(func() { results[i+1], _, errs[i+1] = b.do(context.Background(), ids) })
	}
	waitFor(t, "the later claims to queue", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.waiting) == len(later)
	})
	close(fake.hold)
	wg.Wait()

	if n := fake.count(); n != 2 {
		t.Fatalf("%d statements, want 2 (the first alone, then the three that waited together)", n)
	}
	if got, want := len(fake.statements[1]), 2+4+1; got != want {
		t.Errorf("second statement has %d ids, want %d", got, want)
	}
	for i, ids := range append([][]uuid.UUID{first}, later...) {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		want := slices.Clone(ids)
		want = slices.DeleteFunc(want, func(id uuid.UUID) bool { return fake.refuse[id] })
		slices.Reverse(want) // the claim's order, not the call's
		if got := taskIDs(results[i]); !slices.Equal(got, want) {
			t.Errorf("claim %d got %v, want its own claimed ids in the claim's order %v", i, got, want)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running || len(b.waiting) != 0 {
		t.Errorf("batcher left running=%v with %d waiting, want idle", b.running, len(b.waiting))
	}
}

func TestAnIDTwoClaimsReceivedGoesToTheFirstOnly(t *testing.T) {
	fake := &fakeClaims{hold: make(chan struct{})}
	b := &claimBatcher{claim: fake.claim}
	shared := uuid.New()
	a, c := []uuid.UUID{uuid.New(), shared}, []uuid.UUID{shared, uuid.New()}

	var wg sync.WaitGroup
	wg.Go(func() { _, _, _ = b.do(context.Background(), newIDs(1)) })
	waitFor(t, "the first statement", func() bool { return fake.count() == 1 })
	var gotA, gotC []*store.Task
	wg.Go(func() { gotA, _, _ = b.do(context.Background(), a) })
	waitFor(t, "a to queue", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting) == 1 })
	wg.Go(func() { gotC, _, _ = b.do(context.Background(), c) })
	waitFor(t, "c to queue", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting) == 2 })
	close(fake.hold)
	wg.Wait()

	if !slices.Contains(taskIDs(gotA), shared) || slices.Contains(taskIDs(gotC), shared) {
		t.Errorf("the shared id went to a=%v c=%v; want a only (it queued first)", taskIDs(gotA), taskIDs(gotC))
	}
	if len(gotA) != 2 || len(gotC) != 1 {
		t.Errorf("a got %d tasks, c got %d; want 2 and 1", len(gotA), len(gotC))
	}
}

func TestAFailedStatementFailsEveryClaimInIt(t *testing.T) {
	boom := errors.New("database gone")
	fake := &fakeClaims{hold: make(chan struct{}), err: boom}
	b := &claimBatcher{claim: fake.claim}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() { _, _, errs[0] = b.do(context.Background(), newIDs(1)) })
	waitFor(t, "the first statement", func() bool { return fake.count() == 1 })
	for i := 1; i < 3; i++ {
		wg.Go(func() { _, _, errs[i] = b.do(context.Background(), newIDs(2)) })
	}
	waitFor(t, "the others to queue", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting) == 2 })
	close(fake.hold)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, boom) {
			t.Errorf("claim %d: %v, want %v", i, err, boom)
		}
	}
	if n := fake.count(); n != 2 {
		t.Errorf("%d statements, want 2", n)
	}
}

// A setting that held back a merged statement is reported to every fetch in it: any of
// their unclaimed ids may be one it held back, whose message must not be deleted.
func TestClaimBatcherReportsWhatHeldTheStatementBack(t *testing.T) {
	fake := &fakeClaims{hold: make(chan struct{}), held: store.ClaimReport{HeldBack: store.HeldByConcurrency}}
	b := &claimBatcher{claim: fake.claim}
	var wg sync.WaitGroup
	helds := make([]store.ClaimReport, 3)
	wg.Go(func() { _, helds[0], _ = b.do(context.Background(), newIDs(1)) })
	waitFor(t, "the first statement", func() bool { return fake.count() == 1 })
	for i := 1; i < 3; i++ {
		wg.Go(func() { _, helds[i], _ = b.do(context.Background(), newIDs(2)) })
	}
	waitFor(t, "two fetches waiting", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.waiting) == 2
	})
	close(fake.hold)
	wg.Wait()
	for i, h := range helds {
		if h.HeldBack != store.HeldByConcurrency {
			t.Errorf("fetch %d: held back by %q, want concurrency", i, h.HeldBack)
		}
	}
}
