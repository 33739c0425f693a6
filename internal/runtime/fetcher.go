package runtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// fetcher claims tasks of one queue and hands them to the executor. It claims only what
// the free capacity allows, so a task is never claimed without a slot to run it.
//
// It claims when it starts, then whenever it is woken: by a wake-up from the listener, by
// the idle watcher (idlewatch.go: the queue has a due task), and, while the queue seems
// to have a backlog (the last claim was full), by a slot freeing up. A full claim is
// followed by another one at once, which drains a backlog as fast as slots allow; after
// a short one the queue is idle and claims again only when woken (one NextDue statement
// per poll interval looks for due tasks in all idle queues, instead of a claim each).
type fetcher struct {
	w     *Worker
	queue string
	wake  chan struct{} // buffer 1: the listener, reaper or idle watcher says there may be due tasks
	// idle counts the loops of this queue (FetchLoops) whose last claim came back short
	// and that wait for a wake-up; the idle watcher looks for due tasks on their behalf.
	idle atomic.Int32
	// idleTurn holds one token: with a Source, the loop holding it is the only one of
	// this queue that waits for work while the queue is idle (source.go).
	idleTurn chan struct{}

	// committed (buffer 1) hears that an outcome of the queue was committed (heldback.go).
	committed chan struct{}

	// loops counts the claiming loops started; only the first claims at once.
	loops atomic.Int32
	// concurrencyHeldAt (UnixNano, 0: never) is when a claim was last held back by a
	// concurrency limit (heldback.go).
	concurrencyHeldAt atomic.Int64
	// uncommitted counts the queue's outcomes handed to the committer and not yet
	// written: their tasks are still PROCESSING, so they count against a concurrency
	// limit although their slots are free (heldback.go, roomForClaim).
	uncommitted atomic.Int64
}

// claimLoop is what one claiming loop (of FetchLoops) keeps from one claim to the next.
type claimLoop struct {
	// claimSpan is the span of the last claim, which its tasks' attempt spans link to.
	claimSpan trace.SpanContext

	// after is the claim hint (store.ClaimParams.After): the last task of the previous
	// claim while claims come back full, so that a drain does not walk the index entries
	// of the tasks it already claimed on every claim. It is dropped on a short claim and
	// once it is claimHintMaxAge old, so a task it skips waits at most that long.
	after      *store.ClaimKey
	afterSince time.Time

	// report is what the last claim said about being held back (heldback.go).
	report store.ClaimReport
}

// claimHintMaxAge bounds how long a chain of hinted claims lasts before a claim walks the
// queue from its start again.
const claimHintMaxAge = time.Second

func newFetcher(w *Worker, queue string) *fetcher {
	f := &fetcher{w: w, queue: queue, wake: make(chan struct{}, 1), idleTurn: make(chan struct{}, 1),
		committed: make(chan struct{}, 1)}
	f.idleTurn <- struct{}{}
	return f
}

// notify wakes the fetcher without blocking; wake-ups that arrive while one is pending
// merge into it.
func (f *fetcher) notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) run(ctx context.Context) {
	cfg := &f.w.cfg
	if cfg.Source != nil {
		f.runSource(ctx)
		return
	}
	var loop claimLoop
	// The first loop claims at once on start. The others wait to be woken: by a full
	// claim of a sibling (below), which says the queue has a backlog, or as the first
	// would be. So a worker of many idle queues claims once per queue on start.
	backlog := f.loops.Add(1) == 1
	var counted backlogCount
	defer counted.set(f.w, false)
	failures := 0
	for {
		counted.set(f.w, backlog)
		if !backlog && !f.waitIdle(ctx) {
			return
		}
		if ctx.Err() != nil {
			return
		}
		if backlog && !f.waitForSlots(ctx) {
			return
		}
		n := f.w.capacity.reserve(f.queue, f.claimSize())
		if n == 0 {
			// Every slot is busy (or another queue's fetcher took the last ones): the
			// next claim waits for slots to free up.
			backlog = true
			continue
		}
		if k := f.roomForClaim(n); k < n {
			f.w.capacity.release(f.queue, n-k)
			if n = k; n == 0 {
				if !f.waitCommitted(ctx) {
					return
				}
				backlog = true
				continue
			}
		}
		start := time.Now()
		tasks, err := f.claim(ctx, n, &loop)
		cfg.Observer.ClaimDone(f.queue, len(tasks), time.Since(start), err)
		if err != nil {
			f.w.capacity.release(f.queue, n)
			f.w.counters.claimErrors.Add(1)
			if errors.Is(err, store.ErrInvalid) {
				// The store rejects this worker's claims as such: retrying cannot help.
				f.w.fail(fmt.Errorf("claim tasks of queue %q: %w", f.queue, err))
				return
			}
			failures++
			f.w.log.Warn("claim tasks failed; retrying", "queue", f.queue, "failures", failures, "error", err)
			// An outage's recovery wakes every fetcher (outage.go), so the backoff only
			// paces retries while the store answers but fails.
			f.w.outage.report()
			woken, alive := f.waitAfterError(ctx, errorBackoff(failures))
			if !alive {
				return
			}
			if woken {
				failures = 0 // the store is back: a failure now starts a fresh backoff
			}
			backlog = true
			continue
		}
		failures = 0
		f.w.capacity.release(f.queue, n-len(tasks))
		for _, t := range tasks {
			f.w.executor.start(Delivery{Task: t, claimSpan: loop.claimSpan})
		}
		backlog = len(tasks) == n
		if backlog && cfg.FetchLoops > 1 {
			// A backlog: a sibling loop claims too, while these tasks run (its claim
			// takes the slots they free), so one claim is always in flight.
			f.notify()
		}
		if held := loop.report.HeldBack; held != "" {
			// Due tasks are left that a setting holds back: not idle (heldback.go).
			cfg.Observer.ClaimHeldBack(f.queue, held)
			if !f.waitHeld(ctx, loop.report) {
				return
			}
			backlog = true
		}
	}
}

// backlogCount is whether a claiming loop is counted in Worker.backlogLoops.
type backlogCount bool

// set counts the loop in Worker.backlogLoops while backlog holds.
func (b *backlogCount) set(w *Worker, backlog bool) {
	if bool(*b) == backlog {
		return
	}
	*b = backlogCount(backlog)
	if backlog {
		w.backlogLoops.Add(1)
	} else {
		w.backlogLoops.Add(-1)
	}
}

// waitIdle waits for a wake-up after a short claim; it reports whether ctx is alive.
// Only PENDING queues have the idle watcher (Store.NextDue looks at PENDING tasks); a
// poll-mode worker claiming ENQUEUED tasks polls on its own timer.
func (f *fetcher) waitIdle(ctx context.Context) bool {
	var poll <-chan time.Time
	if f.w.idleWatched() {
		f.idle.Add(1)
		defer f.idle.Add(-1)
	} else {
		t := time.NewTimer(loop.Jitter(f.w.cfg.PollInterval))
		defer t.Stop()
		poll = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-f.wake:
	case <-poll:
	}
	return true
}

// claimSize is the most one claim asks for. A claim takes every free slot, up to
// FetchBatch: claims grow with the free capacity, so a worker with more slots claims in
// fewer, larger statements. A worker of several queues claims at most an equal share of
// its slots at once, so that one queue's backlog cannot take every slot in one claim
// while another queue waits (a full claim is followed by the next at once).
func (f *fetcher) claimSize() int {
	cfg := &f.w.cfg
	return min(cfg.FetchBatch, max(1, cfg.Concurrency/len(f.w.fetchers)))
}

// gatherWindow bounds how long a fetcher with a backlog waits for more slots to free up
// after the first one did.
const gatherWindow = 2 * time.Millisecond

// waitForSlots waits for a free slot, then, briefly, until half a batch is free. Under a
// backlog, slots free up one at a time as handlers finish; claiming for each alone would
// cost a database round trip per task (measured: a 5x slower drain). A slow handler's lone
// slot waits at most gatherWindow. It reports false when ctx ended.
func (f *fetcher) waitForSlots(ctx context.Context) bool {
	freed := f.w.capacity.freed(f.queue)
	for f.w.capacity.free(f.queue) == 0 {
		select {
		case <-ctx.Done():
			return false
		case <-freed:
		}
	}
	want := max(1, min(f.claimSize(), f.w.capacity.limit(f.queue))/2)
	timer := time.NewTimer(gatherWindow)
	defer timer.Stop()
	for f.w.capacity.free(f.queue) < want {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-freed:
		}
	}
	return true
}

// claim runs ClaimTasks outside ctx's cancellation: a claim that the database committed
// must reach the executor, or its tasks would sit leased until the reaper frees them.
func (f *fetcher) claim(ctx context.Context, n int, loop *claimLoop) ([]*store.Task, error) {
	cfg := &f.w.cfg
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.LeaseDuration)
	defer cancel()
	now := time.Now()
	if loop.after != nil && now.Sub(loop.afterSince) >= claimHintMaxAge {
		loop.after = nil
	}
	cctx, span := f.w.startBatch(cctx, "rota.claim", f.queue, n)
	tasks, err := cfg.Store.ClaimTasks(cctx, store.ClaimParams{
		Queue:         f.queue,
		From:          cfg.ClaimFrom,
		WorkerID:      cfg.WorkerID,
		Limit:         n,
		LeaseDuration: cfg.LeaseDuration,
		After:         loop.after,
		Report:        &loop.report,
	})
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("rota.claimed", len(tasks)))
	}
	loop.claimSpan = span.SpanContext()
	endBatch(span, err)
	switch {
	case err != nil || len(tasks) < n:
		loop.after = nil
	default:
		if loop.after == nil {
			loop.afterSince = now
		}
		key := store.ClaimKeyOf(tasks[len(tasks)-1]) // claims come in claim order
		loop.after = &key
	}
	return tasks, err
}

// errorBackoff is the pause after the n-th consecutive failure of a background call:
// exponential from 50ms, capped at 5s, with jitter.
func errorBackoff(n int) time.Duration {
	d := 5 * time.Second
	if n < 8 {
		d = min(d, 50*time.Millisecond<<(n-1))
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// waitAfterError waits d after a failed claim, or less when a wake-up arrives (the
// store is back after an outage, or notified new tasks); it reports whether a wake-up
// ended the wait and whether ctx is alive.
func (f *fetcher) waitAfterError(ctx context.Context, d time.Duration) (woken, alive bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, false
	case <-f.wake:
		return true, true
	case <-t.C:
		return false, true
	}
}

// sleepCtx waits for d or ctx's end; it reports whether the full d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
