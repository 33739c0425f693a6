package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/store"
)

// Source delivers claimed tasks in place of the poll-mode claim. SQS mode is one: its
// workers receive task ids in messages and claim each task in the store before running
// it (internal/sqsmode). The runtime keeps everything else: capacity, handlers,
// heartbeats, fenced outcome writes, the reaper.
//
// The runtime calls Fetch from one loop per queue, never asking for more tasks than the
// queue has free slots, and tells the source about each task whose outcome is settled in
// the store, so that it can acknowledge the delivery only then.
type Source interface {
	// Fetch returns up to max tasks of queue that it has claimed for this worker
	// (PROCESSING, this worker's id, a fresh lease token), waiting for them as long as it
	// likes (a long poll). When ctx ends it returns promptly with whatever it has already
	// claimed: a claimed task that is not returned stays leased until a reaper frees it.
	Fetch(ctx context.Context, queue string, max int) ([]Delivery, error)
	// Extend is called after each successful heartbeat of a delivered task: the delivery
	// must stay invisible to other workers for lease more (SQS: the message's visibility).
	// Failures are the source's to log; the store's lease is what fences the task.
	Extend(ctx context.Context, d Delivery, lease time.Duration)
	// Settle is called from the committer after each batch, with the deliveries whose
	// outcome the store has settled: written (Result.Err == nil) or rejected because the
	// lease was lost (Result.Err is store.ErrLeaseLost), so the store holds the truth
	// either way and the delivery can be acknowledged. A delivery whose outcome could not
	// be written is never settled: it is left for redelivery.
	Settle(ctx context.Context, settled []Settled)
}

// Delivery is a task a Source claimed, with the source's handle on the message that
// brought it.
type Delivery struct {
	Task    *store.Task
	Receipt any // the source's own: an SQS receipt handle, say

	claimSpan trace.SpanContext // the poll-mode claim's span, linked from the attempt's
}

// Settled is a delivery whose outcome the store has settled.
type Settled struct {
	Delivery Delivery
	Outcome  store.Outcome       // what the worker reported
	Result   store.OutcomeResult // what the store did: the new status, or ErrLeaseLost
}

// IdleFetcher is a Source whose Fetch may wait long for work (an SQS long poll) and that
// can wait without slots. For an idle queue (its last Fetch found nothing and none of its
// tasks runs), the runtime calls FetchIdle instead of Fetch, without reserving a slot
// first, so that idle queues hold none of the worker's capacity however many there are.
type IdleFetcher interface {
	// FetchIdle waits for work of queue, as Fetch does, for up to max tasks (a hint: the
	// slots free, or held for this call, when it was made), then calls reserve once with
	// how many tasks it could deliver; reserve returns how many slots it may use, up to
	// that many (the slots held for it, then free ones taken at once, never waiting;
	// maybe 0: other queues took them meanwhile). FetchIdle claims and returns at most
	// that many tasks and hands back whatever else it received at once (SQS: the
	// messages visible again). It need not call reserve when it received nothing.
	FetchIdle(ctx context.Context, queue string, max int, reserve func(n int) int) ([]Delivery, error)
}

// runSource is a fetcher's loop when the worker has a Source: there is no poll timer and
// no wake-up, because Fetch itself waits for work. It asks for as many tasks as there are
// free slots, up to FetchBatch.
//
// Slots are reserved before Fetch, and a Fetch may wait long for work (an SQS long poll
// lasts up to 20 s). So that an idle queue does not sit on capacity that a busy queue
// sharing the worker needs, a loop whose last Fetch found nothing waits for work alone
// (idleTurn: one loop of the queue at a time), and, when the source is an IdleFetcher
// and none of the queue's tasks runs, without any slot: slots are reserved only for what
// the long poll brought (fetchIdle). Otherwise it waits with one slot: a queue with work
// running is not idle, and the slot spares the source handing back messages that the
// queue's own busy loops' reservations left no room for. Seen in a test before the
// first rule: an idle queue's 4 loops held all 20 slots of a worker through their long
// polls while a busy queue of the same worker sat on hundreds of unreceived messages;
// before the second, a worker serving 50 queues, 49 of them idle, kept 49 of its 100
// slots waiting on idle long polls (docs/performance.md).
func (f *fetcher) runSource(ctx context.Context) {
	w := f.w
	src := w.cfg.Source
	idleSrc, canWaitIdle := src.(IdleFetcher)
	failures := 0
	// Whether the last Fetch found nothing. A loop starts idle: a queue proves it has work
	// before its loops take batches of slots.
	idle := true
	// Whether the last idle fetch had to hand work back for want of a slot: then the next
	// one waits with a slot, or busy queues would win every freed slot before it.
	gaveBack := false
	for {
		if idle {
			select {
			case <-ctx.Done():
				return
			case <-f.idleTurn:
			}
		}
		var deliveries []Delivery
		var err error
		var n int
		start := time.Now()
		if idle && canWaitIdle {
			holdSlot := gaveBack || w.capacity.inUse(f.queue) > 0
			r, ok := f.fetchIdle(ctx, idleSrc, holdSlot)
			f.idleTurn <- struct{}{}
			if !ok {
				return
			}
			deliveries, n, err, gaveBack = r.deliveries, r.reserved, r.err, r.gaveBack
		} else {
			var ok bool
			n, ok = f.reserveForFetch(ctx, idle)
			if !ok {
				if idle {
					f.idleTurn <- struct{}{}
				}
				return
			}
			deliveries, err = src.Fetch(ctx, f.queue, n)
			if idle {
				f.idleTurn <- struct{}{}
			}
		}
		if len(deliveries) > n {
			// A source bug; running more than was reserved would break the capacity
			// promise, and dropping claimed tasks would strand them. Fail loudly.
			w.fail(fmt.Errorf("source returned %d tasks for queue %q, asked for at most %d", len(deliveries), f.queue, n))
			w.capacity.release(f.queue, n)
			return
		}
		w.cfg.Observer.ClaimDone(f.queue, len(deliveries), time.Since(start), err)
		w.capacity.release(f.queue, n-len(deliveries))
		for _, d := range deliveries {
			w.executor.start(d)
		}
		idle = err == nil && len(deliveries) == 0
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		w.counters.claimErrors.Add(1)
		if errors.Is(err, store.ErrInvalid) {
			w.fail(fmt.Errorf("fetch tasks of queue %q: %w", f.queue, err))
			return
		}
		failures++
		w.log.Warn("fetch tasks failed; retrying", "queue", f.queue, "failures", failures, "error", err)
		// As the poll fetcher: a database outage's recovery wakes every fetcher
		// (outage.go), so the backoff only paces retries while the store answers but
		// fails (or SQS does: then the probe finds the store well and wakes nobody).
		w.outage.report()
		woken, alive := f.waitAfterError(ctx, errorBackoff(failures))
		if !alive {
			return
		}
		if woken {
			failures = 0
		}
	}
}

// idleFetch is what one fetchIdle brought.
type idleFetch struct {
	deliveries []Delivery
	reserved   int  // slots reserved for them
	gaveBack   bool // the source asked for more slots than it got
	err        error
}

// fetchIdle is an idle loop's wait for work through an IdleFetcher. It waits for a free
// slot (a worker with none would only hand back what it received); then, unless
// holdSlot, it long-polls holding none and reserves slots only for what arrived. With
// holdSlot it reserves one slot first and asks for one task, as a source that is not an
// IdleFetcher waits: the queue has tasks running, or its last idle fetch had to hand
// work back. It reports false when ctx ended.
func (f *fetcher) fetchIdle(ctx context.Context, src IdleFetcher, holdSlot bool) (idleFetch, bool) {
	w := f.w
	var r idleFetch
	want := 1
	if holdSlot {
		n, ok := f.reserveForFetch(ctx, true)
		if !ok {
			return idleFetch{}, false
		}
		r.reserved = n
	} else {
		if !f.waitForSlots(ctx) {
			return idleFetch{}, false
		}
		w.capacity.signalFreed(f.queue) // pass the wake-up on, as reserveForFetch does
		want = max(1, min(w.capacity.free(f.queue), w.cfg.FetchBatch))
	}
	r.deliveries, r.err = src.FetchIdle(ctx, f.queue, want, func(n int) int {
		n = min(n, w.cfg.FetchBatch)
		if n > r.reserved {
			r.reserved += w.capacity.reserve(f.queue, n-r.reserved)
		}
		got := min(n, r.reserved)
		r.gaveBack = r.gaveBack || got < n
		return got
	})
	return r, true
}

// reserveForFetch waits for free slots and reserves them for one Fetch: up to
// FetchBatch, or one when idle. It reports false when ctx ended.
func (f *fetcher) reserveForFetch(ctx context.Context, idle bool) (int, bool) {
	w := f.w
	want := w.cfg.FetchBatch
	if idle {
		want = 1
	}
	for {
		if ctx.Err() != nil || !f.waitForSlots(ctx) {
			return 0, false
		}
		// A freed slot wakes one waiting loop; pass the wake-up on, so the queue's other
		// loops (FetchLoops) look at the free capacity too.
		w.capacity.signalFreed(f.queue)
		if n := w.capacity.reserve(f.queue, want); n > 0 {
			return n, true
		}
	}
}
