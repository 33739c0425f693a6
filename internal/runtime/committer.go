package runtime

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// committer writes outcomes in batches: a batch is sent when it holds CommitBatch
// outcomes, CommitInterval after its first one was submitted (at once, with what is
// queued, when that outcome waited that long behind the previous write), or as soon as
// no handler is left running whose outcome could join it. A failed write is retried
// with backoff; that is harmless because every write is fenced by its lease token (a
// repeat reports ErrLeaseLost and changes nothing).
//
// One write is in flight at a time, and a second one only while no queue has a backlog
// and the one in flight is small (spareWriter): under a trickle an outcome need not wait
// for the write before it, and a drain keeps the single writer that session 8 measured
// as its best (two writers stepped on each other there).
//
// When its ctx ends it stops waiting, writes everything queued and returns; store calls
// then run on a context of their own, cancelled graceBound later.
type committer struct {
	w    *Worker
	in   chan pendingOutcome
	done chan struct{} // closed when run returns: nothing will be written any more

	carry *pendingOutcome // an outcome held over to the next batch (same task twice)

	// held counts the outcomes submitted and not yet written or dropped; an outage's
	// recovery waits for it to reach 0 before claims resume (waitHeld).
	held atomic.Int64

	// busy counts the handlers started whose outcome is not handed over yet (nor
	// dropped): while it is 0 no outcome can join the batch being collected, so the
	// batch goes at once instead of waiting out CommitInterval.
	busy atomic.Int64

	// hurry (buffer 1) ends the wait of the batch being collected: a fetcher held back
	// by a concurrency limit waits for outcomes to be written (heldback.go), and the
	// limit counts a task until its outcome is written, not until its handler returned.
	hurry chan struct{}

	// writing counts the writes in flight (run's goroutine only); each write, on a
	// goroutine of its own, sends on writeEnded (buffer maxWrites) when it returns.
	writing    int
	writeEnded chan struct{}
	// writingOutcomes counts the outcomes of the writes in flight (spareWriter).
	writingOutcomes atomic.Int64
}

// maxWrites is the most outcome writes in flight at once (spareWriter).
const maxWrites = 2

// spareBeside is the most outcomes the write in flight may carry for a second write to
// start beside it. A trickle's writes carry a few (at 1,000-2,000 tasks/s on an idle
// machine, 5-10); writes grow when they slow down (a batch is about the rate times a
// write's time), so a large one says the database is busy, and there a second write
// costs more than its wait saves (loaded runs at 2,000/s, docs/performance.md session 11).
const spareBeside = 16

type pendingOutcome struct {
	e *inflight
	o store.Outcome
	// submitted is when the handler handed the outcome over: a batch waits
	// CommitInterval from its first outcome's submission, not from when the committer got
	// to it (one that queued behind a write has waited already).
	submitted time.Time
}

func newCommitter(w *Worker) *committer {
	return &committer{
		w: w,
		// Room for a whole batch besides the slots: a handler hands its outcome over and
		// frees its slot while the previous batch is being written. With room for only
		// Concurrency outcomes, every slot of a busy worker waited for each write to end
		// before its next claim. A committer that stalls (the database is down) still
		// stalls claiming once this is full.
		in:         make(chan pendingOutcome, max(w.cfg.Concurrency, w.cfg.CommitBatch)),
		done:       make(chan struct{}),
		hurry:      make(chan struct{}, 1),
		writeEnded: make(chan struct{}, maxWrites),
	}
}

// handlerStarted counts a handler whose outcome is to come (busy); handlerGone, called
// once for each, before its outcome is submitted or when it has none to submit.
func (c *committer) handlerStarted() { c.busy.Add(1) }
func (c *committer) handlerGone()    { c.busy.Add(-1) }

// expedite has the batch being collected written now instead of after CommitInterval.
func (c *committer) expedite() {
	select {
	case c.hurry <- struct{}{}:
	default:
	}
}

// submit queues an outcome; it reports false when the committer has stopped.
func (c *committer) submit(p pendingOutcome) bool {
	c.held.Add(1)
	f := c.w.fetchers[p.e.task.Queue]
	if f != nil {
		f.uncommitted.Add(1)
	}
	select {
	case c.in <- p:
		return true
	case <-c.done:
		c.held.Add(-1)
		if f != nil {
			f.uncommitted.Add(-1)
		}
		return false
	}
}

// waitHeld waits until every outcome submitted so far is written (or dropped), or ctx
// ends. Only an outage's recovery calls it, so it simply polls.
func (c *committer) waitHeld(ctx context.Context) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for c.held.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *committer) run(ctx context.Context) {
	defer close(c.done)
	storeCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(c.w.cfg.graceBound(), cancel) })
	defer stop()

	for {
		var first pendingOutcome
		if c.carry != nil {
			first, c.carry = *c.carry, nil
		} else {
			select {
			case first = <-c.in:
			case <-ctx.Done():
				c.waitWrites(0)
				c.flush(ctx, storeCtx)
				return
			}
		}
		c.dispatch(storeCtx, c.collect(ctx, first))
	}
}

// dispatch starts the write of batch on a goroutine of its own once a writer is free:
// at once when nothing is in flight, beside the write in flight while spareWriter
// allows. While it waits for a write to end, outcomes queue; the batch takes them along
// (topUp), as a single writer's next batch would.
func (c *committer) dispatch(storeCtx context.Context, batch []pendingOutcome) {
	c.waitWrites(maxWrites) // count the writes that ended meanwhile
	for c.writing > 0 && (c.writing >= maxWrites || !c.spareWriter()) {
		c.waitWrites(c.writing - 1)
		batch = c.topUp(batch)
	}
	c.writing++
	c.writingOutcomes.Add(int64(len(batch)))
	go func() {
		defer func() { c.writeEnded <- struct{}{} }()
		defer c.writingOutcomes.Add(-int64(len(batch)))
		c.commit(storeCtx, batch)
	}()
}

// waitWrites waits until at most n writes are in flight, counting those that ended.
func (c *committer) waitWrites(n int) {
	for c.writing > 0 {
		if c.writing <= n {
			select { // count what has ended without waiting
			case <-c.writeEnded:
				c.writing--
				continue
			default:
				return
			}
		}
		<-c.writeEnded
		c.writing--
	}
}

// spareWriter reports whether a second write may start beside the one in flight: only
// while no claiming loop has a backlog (its last claim came back short of its ask), so
// that a drain, whose claims come back full, keeps one writer, and only beside a small
// write (spareBeside). A Source settles its deliveries after each write
// (Source.Settle), one batch at a time, as it always has.
func (c *committer) spareWriter() bool {
	return c.w.cfg.Source == nil && c.w.backlogLoops.Load() == 0 && c.writingOutcomes.Load() <= spareBeside
}

// topUp adds what is queued to batch, without waiting, up to CommitBatch.
func (c *committer) topUp(batch []pendingOutcome) []pendingOutcome {
	if c.carry != nil {
		return batch // the carried outcome goes first in the next batch
	}
	inBatch := make(map[uuid.UUID]bool, len(batch))
	for _, p := range batch {
		inBatch[p.o.TaskID] = true
	}
	for len(batch) < c.w.cfg.CommitBatch {
		select {
		case p := <-c.in:
			if inBatch[p.o.TaskID] {
				c.carry = carried(p)
				return batch
			}
			inBatch[p.o.TaskID] = true
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// carried returns a copy of p to hold over. Taking p's own address would make every
// outcome received into p escape to the heap, not only the rare one carried.
func carried(p pendingOutcome) *pendingOutcome { return &p }

// collect builds a batch starting with first.
func (c *committer) collect(ctx context.Context, first pendingOutcome) []pendingOutcome {
	cfg := &c.w.cfg
	// Sized for what is queued already (a batch that grew by appending copied itself
	// over and over: a twentieth of a draining worker's allocated bytes).
	batch := make([]pendingOutcome, 1, min(len(c.in)+1, cfg.CommitBatch))
	batch[0] = first
	inBatch := make(map[uuid.UUID]bool, cap(batch))
	inBatch[first.o.TaskID] = true
	var timeout <-chan time.Time
	if wait := cfg.CommitInterval - time.Since(first.submitted); wait > 0 && ctx.Err() == nil && !c.writeAtOnce(first) && c.busy.Load() > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for len(batch) < cfg.CommitBatch {
		var p pendingOutcome
		if timeout == nil {
			select { // never wait: take only what is queued
			case p = <-c.in:
			default:
				return batch
			}
		} else {
			select {
			case p = <-c.in:
			case <-timeout:
				return batch
			case <-c.hurry:
				return batch
			case <-ctx.Done():
				timeout = nil
				continue
			}
		}
		if inBatch[p.o.TaskID] {
			// One write per task per batch: a task re-claimed by this worker after its
			// lease was lost may have its stale and its live outcome queued together.
			c.carry = carried(p)
			return batch
		}
		inBatch[p.o.TaskID] = true
		batch = append(batch, p)
		if timeout != nil && c.busy.Load() == 0 {
			timeout = nil // no handler left whose outcome could join: take what is queued
		}
	}
	return batch
}

// writeAtOnce reports whether the batch starting with first is written without waiting
// for more outcomes: its queue's claims were held back by a concurrency limit lately,
// and a task counts against that limit until its outcome is written (heldback.go), so
// the wait would hold the queue's next claims back too.
func (c *committer) writeAtOnce(first pendingOutcome) bool {
	f := c.w.fetchers[first.e.task.Queue]
	return f != nil && f.concurrencyHeldRecently()
}

// flush writes everything still queued, in batches, without waiting for more (ctx is done).
func (c *committer) flush(ctx, storeCtx context.Context) {
	for {
		var first pendingOutcome
		if c.carry != nil {
			first, c.carry = *c.carry, nil
		} else {
			select {
			case first = <-c.in:
			default:
				return
			}
		}
		c.commit(storeCtx, c.collect(ctx, first))
	}
}

// commit writes batch, retrying transient errors until storeCtx ends.
func (c *committer) commit(storeCtx context.Context, batch []pendingOutcome) {
	w := c.w
	defer c.held.Add(-int64(len(batch)))
	outcomes := make([]store.Outcome, 0, len(batch))
	for _, p := range batch {
		outcomes = append(outcomes, p.o)
	}
	for failures := 1; ; failures++ {
		cctx, cancel := context.WithTimeout(storeCtx, w.cfg.LeaseDuration)
		cctx, span := w.startBatch(cctx, "rota.commit", "", len(outcomes))
		linkAttempts(span, batch)
		start := time.Now()
		results, err := w.cfg.Store.RecordOutcomes(cctx, outcomes)
		endBatch(span, err)
		w.cfg.Observer.CommitDone(len(outcomes), time.Since(start), err)
		cancel()
		if err == nil {
			c.apply(storeCtx, batch, results)
			return
		}
		if errors.Is(err, store.ErrLeaseLost) { // a whole-call answer: every outcome was rejected
			results = make([]store.OutcomeResult, len(batch))
			for i, p := range batch {
				results[i] = store.OutcomeResult{TaskID: p.o.TaskID, Err: err}
			}
			c.apply(storeCtx, batch, results)
			return
		}
		w.counters.commitErrors.Add(1)
		giveUp := errors.Is(err, store.ErrInvalid) // retrying cannot help
		if !giveUp {
			w.log.Warn("record outcomes failed; retrying", "count", len(batch), "failures", failures, "error", err)
			// Retried at once when the store comes back from an outage (outage.go).
			isBack, alive := w.outage.wait(storeCtx, w.outage.report(), errorBackoff(failures))
			giveUp = !alive
			if isBack {
				failures = 0 // a failure now starts a fresh backoff
			}
		}
		if giveUp {
			// The leases will expire and a reaper will retry these tasks.
			w.log.Error("record outcomes failed; outcomes dropped", "count", len(batch), "error", err)
			for _, p := range batch {
				w.registry.remove(p.e)
			}
			c.notifyCommitted(batch)
			return
		}
	}
}

// apply counts and logs what the store did with each outcome, then settles the
// deliveries of a Source: only now, with the outcome committed, may their messages go.
func (c *committer) apply(ctx context.Context, batch []pendingOutcome, results []store.OutcomeResult) {
	w := c.w
	var settled []Settled
	byID := results
	if len(results) != len(batch) {
		byID = nil
	}
	for i, p := range batch {
		w.registry.remove(p.e)
		var r store.OutcomeResult
		if byID != nil && byID[i].TaskID == p.o.TaskID {
			r = byID[i]
		} else if found, ok := findResult(results, p.o.TaskID); ok {
			r = found
		} else {
			w.counters.commitErrors.Add(1)
			w.log.Error("record outcomes returned no result for a task", taskAttrs(p.e.task)...)
			continue
		}
		switch {
		case errors.Is(r.Err, store.ErrLeaseLost):
			if p.e.leaseLost.CompareAndSwap(false, true) {
				w.counters.leaseLost.Add(1)
				w.cfg.Observer.LeaseLost(p.e.task)
			}
			w.log.Warn("outcome rejected: the lease was lost", append(taskAttrs(p.e.task), "outcome", p.o.Kind)...)
		case r.Err != nil:
			w.counters.commitErrors.Add(1)
			w.log.Error("outcome not recorded", append(taskAttrs(p.e.task), "outcome", p.o.Kind, "error", r.Err)...)
			continue // not settled: a Source's delivery is left for redelivery
		default:
			c.count(ctx, p.e.task, p.o, r.Status)
			w.cfg.Observer.OutcomeRecorded(p.e.task, r.Status)
		}
		if w.cfg.Source != nil {
			settled = append(settled, Settled{
				Delivery: Delivery{Task: p.e.task, Receipt: p.e.receipt},
				Outcome:  p.o,
				Result:   r,
			})
		}
	}
	if len(settled) > 0 {
		w.cfg.Source.Settle(ctx, settled)
	}
	c.notifyCommitted(batch)
}

// notifyCommitted tells the fetchers of the batch's queues that tasks of theirs stopped
// running: a claim held back by a concurrency limit may now fit (heldback.go).
func (c *committer) notifyCommitted(batch []pendingOutcome) {
	// Every count first, then the wake-ups: a fetcher woken by them sees the whole batch
	// written (roomForClaim).
	for _, p := range batch {
		if f := c.w.fetchers[p.e.task.Queue]; f != nil {
			f.uncommitted.Add(-1)
		}
	}
	last := ""
	for _, p := range batch {
		if q := p.e.task.Queue; q != last {
			last = q
			if f := c.w.fetchers[q]; f != nil {
				f.notifyCommitted()
			}
		}
	}
}

// count counts a recorded outcome and logs it. A task's log attributes are built only
// for a line that is written: boxed into a []any they were four allocations per task,
// on a success's Debug line that is usually off.
func (c *committer) count(ctx context.Context, t *store.Task, o store.Outcome, status store.Status) {
	k, log := &c.w.counters, c.w.log
	if status == store.StatusSucceeded {
		k.succeeded.Add(1)
		if log.Enabled(ctx, slog.LevelDebug) {
			log.Debug("task succeeded", taskAttrs(t)...)
		}
		return
	}
	attrs := taskAttrs(t)
	switch status {
	case store.StatusPending, store.StatusEnqueued:
		k.retried.Add(1)
		log.Info("task will be retried", append(attrs, "retry_in", o.RetryIn, "error", o.Error)...)
	case store.StatusDead:
		k.dead.Add(1)
		log.Warn("task is dead: attempts exhausted", append(attrs, "error", o.Error)...)
	case store.StatusFailed:
		k.failed.Add(1)
		log.Warn("task failed permanently", append(attrs, "error", o.Error)...)
	case store.StatusCanceled:
		k.canceled.Add(1)
		log.Info("task canceled", append(attrs, "error", o.Error)...)
	default:
		log.Warn("outcome recorded with an unexpected status", append(attrs, "status", status)...)
	}
}

func findResult(results []store.OutcomeResult, id uuid.UUID) (store.OutcomeResult, bool) {
	for _, r := range results {
		if r.TaskID == id {
			return r, true
		}
	}
	return store.OutcomeResult{}, false
}
