package runtime

import (
	"sync"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// While a concurrency limit holds a queue's claims back (heldback.go), a task counts
// against the limit until its outcome is written. Written by the committer, each
// outcome costs a round trip and a commit of its own before the claim that takes its
// slot can count it as ended: claim and write follow each other, never overlap, and
// the limited drain ran at 0.6-0.7 of the unlimited one (docs/performance.md "Flow
// control"). So while the limit bites, the queue's outcomes wait in the fetcher's
// outbox instead, and its next claim writes them in its own transaction
// (store.ClaimParams.Outcomes): one round trip and one commit for both.
//
// The next claim comes soon: a handler that ends frees its slot right after handing its
// outcome over, which wakes the fetcher (waitForSlots). Whatever is not taken within
// outboxWait, or when the fetcher waits for anything but slots, goes to the committer.

// Only a concurrency limit engages it: a plain queue's claim can look flow controlled to
// the store (a task came in between its plain and its limited statement), and its
// outcomes must not wait for claims (the steady workload's time to SUCCEEDED).

// outboxWait bounds how long an outcome waits in the outbox for a claim to take it.
const outboxWait = 5 * time.Millisecond

// outbox holds a queue's outcomes for its next claim.
type outbox struct {
	mu     sync.Mutex
	held   []pendingOutcome
	timer  *time.Timer // hands held outcomes to the committer after outboxWait
	closed bool        // the fetcher stopped claiming: outcomes go to the committer
}

// holdOutcome keeps p for the queue's next claim, when the queue's claims were held back
// by a concurrency limit lately and the fetcher claims in poll mode; it reports whether
// it kept it (otherwise the caller hands it to the committer).
func (f *fetcher) holdOutcome(p pendingOutcome) bool {
	if f.w.cfg.Source != nil || !f.concurrencyHeldRecently() {
		return false
	}
	b := &f.outbox
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.held = append(b.held, p)
	if len(b.held) == 1 {
		if b.timer == nil {
			b.timer = time.AfterFunc(outboxWait, f.flushOutbox)
		} else {
			b.timer.Reset(outboxWait)
		}
	}
	return true
}

// takeOutbox returns the held outcomes, for a claim to write.
func (f *fetcher) takeOutbox() []pendingOutcome {
	b := &f.outbox
	b.mu.Lock()
	defer b.mu.Unlock()
	held := b.held
	b.held = nil
	if b.timer != nil {
		b.timer.Stop()
	}
	return held
}

// flushOutbox hands the held outcomes to the committer.
func (f *fetcher) flushOutbox() {
	f.w.submitAll(f.takeOutbox())
}

// closeOutbox flushes the outbox for good: the fetcher's loops have stopped.
func (f *fetcher) closeOutbox() {
	f.outbox.mu.Lock()
	f.outbox.closed = true
	f.outbox.mu.Unlock()
	f.flushOutbox()
}

// submitOutcome hands p to the fetcher of its queue (holdOutcome) or the committer; it
// reports false when the committer has stopped.
func (w *Worker) submitOutcome(p pendingOutcome) bool {
	if f := w.fetchers[p.e.task.Queue]; f != nil && f.holdOutcome(p) {
		return true
	}
	return w.committer.submit(p)
}

// submitAll hands outcomes to the committer: held ones a claim did not write.
func (w *Worker) submitAll(ps []pendingOutcome) {
	for _, p := range ps {
		if !w.committer.submit(p) {
			w.registry.remove(p.e)
			w.log.Warn("outcome dropped: the worker has stopped", append(taskAttrs(p.e.task), "outcome", p.o.Kind)...)
		}
	}
}

// outcomesOf returns the outcomes of held, for store.ClaimParams.Outcomes (nil: none).
func outcomesOf(held []pendingOutcome) []store.Outcome {
	if len(held) == 0 {
		return nil
	}
	out := make([]store.Outcome, len(held))
	for i, p := range held {
		out[i] = p.o
	}
	return out
}
