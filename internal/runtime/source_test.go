package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// fakeSource delivers the ids pushed into it, claiming each in the store first, as the
// SQS source does with the ids of messages. It records what the runtime tells it.
type fakeSource struct {
	store store.Store
	ids   chan uuid.UUID

	mu        sync.Mutex
	problems  []string // contract breaches seen (checked by the tests that need them)
	extended  map[uuid.UUID]int
	settled   map[uuid.UUID]store.Status // the status the store held when Settle was called
	settleErr map[uuid.UUID]error
}

func newFakeSource(s store.Store) *fakeSource {
	return &fakeSource{store: s, ids: make(chan uuid.UUID, 1000),
		extended: map[uuid.UUID]int{}, settled: map[uuid.UUID]store.Status{}, settleErr: map[uuid.UUID]error{}}
}

func (f *fakeSource) Fetch(ctx context.Context, queue string, max int) ([]runtime.Delivery, error) {
	var ids []uuid.UUID
	select {
	case <-ctx.Done():
		return nil, nil
	case id := <-f.ids:
		ids = append(ids, id)
	}
	for len(ids) < max {
		select {
		case id := <-f.ids:
			ids = append(ids, id)
			continue
		default:
		}
		break
	}
	tasks, err := f.store.ClaimTasks(context.WithoutCancel(ctx), store.ClaimParams{
		Queue: queue, From: store.StatusPending, TaskIDs: ids, WorkerID: "test-worker",
		Limit: len(ids), LeaseDuration: 5 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Delivery, len(tasks))
	for i, t := range tasks {
		out[i] = runtime.Delivery{Task: t, Receipt: "receipt-" + t.ID.String()}
	}
	return out, nil
}

func (f *fakeSource) Extend(_ context.Context, d runtime.Delivery, lease time.Duration) {
	f.mu.Lock()
	if d.Receipt != "receipt-"+d.Task.ID.String() {
		f.problems = append(f.problems, fmt.Sprintf("Extend got receipt %v for task %s", d.Receipt, d.Task.ID))
	}
	f.extended[d.Task.ID]++
	f.mu.Unlock()
}

func (f *fakeSource) Settle(ctx context.Context, settled []runtime.Settled) {
	for _, s := range settled {
		// The outcome must already be committed: the store shows it.
		task, err := f.store.GetTask(ctx, s.Delivery.Task.ID)
		f.mu.Lock()
		if s.Delivery.Receipt != "receipt-"+s.Delivery.Task.ID.String() {
			f.problems = append(f.problems, fmt.Sprintf("Settle got receipt %v for task %s", s.Delivery.Receipt, s.Delivery.Task.ID))
		}
		if err == nil {
			f.settled[task.ID] = task.Status
		}
		f.settleErr[s.Delivery.Task.ID] = s.Result.Err
		f.mu.Unlock()
	}
}

func (f *fakeSource) snapshot() (settled map[uuid.UUID]store.Status, extended map[uuid.UUID]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	settled = make(map[uuid.UUID]store.Status, len(f.settled))
	for k, v := range f.settled {
		settled[k] = v
	}
	extended = make(map[uuid.UUID]int, len(f.extended))
	for k, v := range f.extended {
		extended[k] = v
	}
	return settled, extended
}

func TestSourceDeliversSettlesAfterCommitAndExtends(t *testing.T) {
	var running gauge
	mux := runtime.NewMux()
	mux.HandleFunc("quick", func(ctx context.Context, job *runtime.Job) error {
		running.inc()
		defer running.dec()
		time.Sleep(time.Millisecond)
		return nil
	})
	mux.HandleFunc("slow", func(ctx context.Context, job *runtime.Job) error {
		running.inc()
		defer running.dec()
		time.Sleep(150 * time.Millisecond) // several heartbeat intervals
		return nil
	})
	mux.HandleFunc("broken", func(ctx context.Context, job *runtime.Job) error {
		return runtime.Permanent(errors.New("bad payload"))
	})
	cfg := testConfig(t)
	cfg.Concurrency = 3
	cfg.Store = newMemoryStore(t)
	src := newFakeSource(cfg.Store)
	cfg.Source = src
	h := newHarness(t, mux, cfg).start()

	var quick []uuid.UUID
	for range 20 {
		quick = append(quick, h.create(store.CreateParams{Kind: "quick"})...)
	}
	slow := h.create(store.CreateParams{Kind: "slow"})[0]
	broken := h.create(store.CreateParams{Kind: "broken"})[0]
	for _, id := range append(append(quick, slow), broken) {
		src.ids <- id
	}

	waitFor(t, "every task settled", func() bool {
		settled, _ := src.snapshot()
		return len(settled) == len(quick)+2
	})
	settled, extended := src.snapshot()
	for _, id := range append(quick, slow) {
		if settled[id] != store.StatusSucceeded {
			t.Errorf("task %s: status at Settle %q, want SUCCEEDED (settled only after the commit)", id, settled[id])
		}
	}
	if settled[broken] != store.StatusFailed {
		t.Errorf("broken task: status at Settle %q, want FAILED", settled[broken])
	}
	if peak := running.peak.Load(); peak > int64(cfg.Concurrency) {
		t.Errorf("%d handlers ran at once, more than Concurrency %d: Fetch was asked for more than the free slots", peak, cfg.Concurrency)
	}
	if extended[slow] == 0 {
		t.Errorf("the slow task's delivery was never extended by a heartbeat")
	}
	h.stop()
	src.mu.Lock()
	for _, p := range src.problems {
		t.Error(p)
	}
	src.mu.Unlock()
	if st := h.worker.Stats(); st.Succeeded != int64(len(quick)+1) || st.Failed != 1 {
		t.Errorf("stats %+v, want %d succeeded and 1 failed", st, len(quick)+1)
	}
}

func TestSourceDeliveryNotSettledWhenTheOutcomeIsNotWritten(t *testing.T) {
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(ctx context.Context, job *runtime.Job) error { return nil })
	mem := newMemoryStore(t)
	ws := &wrapStore{Store: mem, record: func(ctx context.Context, o []store.Outcome) ([]store.OutcomeResult, error) {
		// A failure retrying cannot fix: the committer drops the outcome.
		return nil, fmt.Errorf("%w: refused by the test", store.ErrInvalid)
	}}
	cfg := testConfig(t)
	cfg.Store = ws
	src := newFakeSource(mem)
	cfg.Source = src
	h := newHarness(t, mux, cfg).start()

	id := h.create(store.CreateParams{Kind: "noop"})[0]
	src.ids <- id
	waitFor(t, "the commit to be given up", func() bool { return h.worker.Stats().CommitErrors > 0 && h.worker.Stats().InFlight == 0 })
	h.stop()
	if settled, _ := src.snapshot(); len(settled) != 0 {
		t.Errorf("settled %v although no outcome was written: the delivery must be left for redelivery", settled)
	}
	if got := h.get(id); got.Status != store.StatusProcessing {
		t.Errorf("task status %s, want PROCESSING (nothing written; the reaper frees it)", got.Status)
	}
}

// countingObserver counts the events a worker reports.
type countingObserver struct {
	runtime.NopObserver
	mu       sync.Mutex
	claimed  int
	started  map[string]int // by kind
	handled  int
	recorded map[store.Status]int
	commits  int
}

func (o *countingObserver) ClaimDone(_ string, n int, _ time.Duration, _ error) {
	o.mu.Lock()
	o.claimed += n
	o.mu.Unlock()
}

func (o *countingObserver) TaskClaimed(t *store.Task) {
	o.mu.Lock()
	o.started[t.Kind]++
	o.mu.Unlock()
}

func (o *countingObserver) HandlerDone(*store.Task, time.Duration, error) {
	o.mu.Lock()
	o.handled++
	o.mu.Unlock()
}

func (o *countingObserver) CommitDone(int, time.Duration, error) {
	o.mu.Lock()
	o.commits++
	o.mu.Unlock()
}

func (o *countingObserver) OutcomeRecorded(_ *store.Task, s store.Status) {
	o.mu.Lock()
	o.recorded[s]++
	o.mu.Unlock()
}

func TestObserverSeesClaimsHandlersAndOutcomes(t *testing.T) {
	mux := runtime.NewMux()
	mux.HandleFunc("noop", func(ctx context.Context, job *runtime.Job) error { return nil })
	mux.HandleFunc("fail", func(ctx context.Context, job *runtime.Job) error { return errors.New("boom") })
	obs := &countingObserver{started: map[string]int{}, recorded: map[store.Status]int{}}
	cfg := testConfig(t)
	cfg.Observer = obs
	h := newHarness(t, mux, cfg).start()
	for range 10 {
		h.create(store.CreateParams{Kind: "noop"})
	}
	dead := h.create(store.CreateParams{Kind: "fail", MaxAttempts: 2})[0]
	h.waitStatus(dead, store.StatusDead)
	waitFor(t, "10 successes observed", func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return obs.recorded[store.StatusSucceeded] == 10
	})
	h.stop()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.claimed != 12 || obs.handled != 12 {
		t.Errorf("observed %d claimed and %d handled, want 12 each (10 noop, 2 attempts of fail)", obs.claimed, obs.handled)
	}
	if obs.started["noop"] != 10 || obs.started["fail"] != 2 {
		t.Errorf("TaskClaimed by kind %v, want noop:10 fail:2", obs.started)
	}
	if obs.recorded[store.StatusPending] != 1 || obs.recorded[store.StatusDead] != 1 {
		t.Errorf("recorded %v, want one retry (PENDING) and one DEAD", obs.recorded)
	}
	if obs.commits == 0 {
		t.Errorf("no commit observed")
	}
}

// idleQueueSource serves queue "idle", which never has work, beside a fakeSource that
// serves the others. A Fetch of "idle" waits like a long poll and records what the
// runtime reserved for it.
type idleQueueSource struct {
	*fakeSource

	mu             sync.Mutex
	polls          int
	inFlight, most int // idle Fetch calls running at once, and the most seen
	largest        int // the largest max an idle Fetch was given
}

func (s *idleQueueSource) Fetch(ctx context.Context, queue string, max int) ([]runtime.Delivery, error) {
	if queue != "idle" {
		return s.fakeSource.Fetch(ctx, queue, max)
	}
	s.mu.Lock()
	s.polls++
	s.inFlight++
	s.most = maxInt(s.most, s.inFlight)
	s.largest = maxInt(s.largest, max)
	s.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	return nil, nil
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// TestIdleQueueHoldsOneSlotWhileWaitingForWork: a queue with no work, whose Fetch waits
// like an SQS long poll, is polled by one loop at a time with one slot reserved, so a busy
// queue of the same worker gets the rest of the capacity. (Before: the idle queue's loops
// held every slot through their polls and re-took them as each ended; the busy queue's
// tasks waited.)
func TestIdleQueueHoldsOneSlotWhileWaitingForWork(t *testing.T) {
	mux := runtime.NewMux()
	mux.HandleFunc("quick", func(ctx context.Context, job *runtime.Job) error { return nil })
	cfg := testConfig(t)
	cfg.Concurrency = 4
	cfg.FetchBatch = 10
	cfg.FetchLoops = 4
	cfg.Queues = map[string]int{"idle": 4, "busy": 4}
	cfg.Store = newMemoryStore(t)
	src := &idleQueueSource{fakeSource: newFakeSource(cfg.Store)}
	cfg.Source = src
	h := newHarness(t, mux, cfg).start()

	ids := h.create(func() []store.CreateParams {
		ps := make([]store.CreateParams, 200)
		for i := range ps {
			ps[i] = store.CreateParams{Kind: "quick", Queue: "busy"}
		}
		return ps
	}()...)
	for _, id := range ids {
		src.ids <- id
	}
	waitFor(t, "every busy task settled", func() bool {
		settled, _ := src.snapshot()
		return len(settled) == len(ids)
	})

	src.mu.Lock()
	defer src.mu.Unlock()
	if src.polls == 0 {
		t.Fatal("the idle queue was never polled")
	}
	if src.largest != 1 || src.most != 1 {
		t.Errorf("idle queue: polled with up to %d slots, by up to %d loops at once; want 1 and 1", src.largest, src.most)
	}
}

// idleFetcherSource is an idleQueueSource that is also a runtime.IdleFetcher: its idle
// queues' FetchIdle waits like a long poll and never finds work; other queues' idle
// fetches take the ids pushed into the fakeSource, reserving slots for them.
type idleFetcherSource struct {
	*idleQueueSource
	idleWaits int // FetchIdle calls of "idle*" queues running at once, now
}

// Fetch of an "idle*" queue (with slots reserved) waits like a long poll that finds
// nothing.
func (s *idleFetcherSource) Fetch(ctx context.Context, queue string, max int) ([]runtime.Delivery, error) {
	if queue == "busy" {
		return s.fakeSource.Fetch(ctx, queue, max)
	}
	s.mu.Lock()
	s.idleWaits++
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.idleWaits--
	s.mu.Unlock()
	return nil, nil
}

func (s *idleFetcherSource) FetchIdle(ctx context.Context, queue string, max int, reserve func(int) int) ([]runtime.Delivery, error) {
	if queue == "busy" {
		ds, err := s.fakeSource.Fetch(ctx, queue, 1)
		if len(ds) == 0 || err != nil {
			return nil, err
		}
		if reserve(len(ds)) < len(ds) {
			// This test keeps a slot free for every busy task; a real source would give
			// the message back.
			return nil, errors.New("no slot for a received task")
		}
		return ds, nil
	}
	s.mu.Lock()
	s.polls++
	s.idleWaits++
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.idleWaits--
	s.mu.Unlock()
	return nil, nil
}

// TestIdleQueuesHoldNoSlotWithAnIdleFetcher (issue 12 item 9, SQS half): with a source
// that can wait without slots, idle queues long-poll holding none, so a busy queue of
// the same worker can run on every slot. Before, each idle queue's poll held one: with
// 3 idle queues and 4 slots, the busy queue ran one task at a time.
func TestIdleQueuesHoldNoSlotWithAnIdleFetcher(t *testing.T) {
	const slots = 4
	running := make(chan struct{}, slots)
	release := make(chan struct{})
	mux := runtime.NewMux()
	mux.HandleFunc("wide", func(ctx context.Context, job *runtime.Job) error {
		running <- struct{}{}
		<-release
		return nil
	})
	cfg := testConfig(t)
	cfg.Concurrency = slots
	cfg.FetchBatch = 10
	cfg.Queues = map[string]int{"idle1": 0, "idle2": 0, "idle3": 0, "busy": 0}
	cfg.Store = newMemoryStore(t)
	src := &idleFetcherSource{idleQueueSource: &idleQueueSource{fakeSource: newFakeSource(cfg.Store)}}
	cfg.Source = src
	h := newHarness(t, mux, cfg).start()
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(let) // before the harness stops the worker, on failure too

	waitFor(t, "the idle queues to be polled", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.idleWaits == 3
	})
	ids := h.createN(slots, store.CreateParams{Kind: "wide", Queue: "busy"})
	for _, id := range ids {
		src.ids <- id
	}
	// Every slot runs a busy task at once, while the idle queues still wait for work.
	for range slots {
		select {
		case <-running:
		case <-time.After(10 * time.Second):
			src.mu.Lock()
			waits := src.idleWaits
			src.mu.Unlock()
			t.Fatalf("fewer than %d busy tasks ran at once (idle polls waiting: %d)", slots, waits)
		}
	}
	let()
	waitFor(t, "every busy task settled", func() bool {
		settled, _ := src.snapshot()
		return len(settled) == len(ids)
	})
}
