package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// executor runs claimed tasks, one goroutine each. The pool is bounded by the capacity
// the fetchers reserved: a goroutine exists only for a reserved slot and gives the slot
// back once its outcome is handed to the committer (so a stalled committer stalls
// claiming too, once its queue of outcomes is full).
type executor struct {
	w    *Worker
	base context.Context // parent of every handler context; cancelled after ShutdownGrace
	wg   sync.WaitGroup
}

// start registers a claimed task for heartbeats and runs it. The caller holds a slot for it.
func (x *executor) start(d Delivery) {
	ctx, cancel := context.WithCancelCause(x.base)
	lastBeat := leaseStart(d.Task, x.w.cfg.Now(), x.w.cfg.LeaseDuration)
	e := &inflight{task: d.Task, receipt: d.Receipt, cancel: cancel, claim: d.claimSpan}
	e.lastBeat.Store(lastBeat.UnixNano())
	x.w.counters.claimed.Add(1)
	x.w.cfg.Observer.TaskClaimed(d.Task)
	x.w.registry.add(e)
	if x.w.cancels.has(d.Task.ID) {
		// A cancel notification came before the task got here: it may be this attempt's
		// (claimed, then canceled) or an earlier one's (canceled, replayed, claimed).
		go x.w.checkCancel(x.base, e)
	}
	x.w.committer.handlerStarted()
	x.wg.Add(1)
	go x.run(ctx, e)
}

// leaseStart is when the store granted t's lease, by this worker's clock: its expiry less
// the lease, which is earlier than now when a Source claimed the task a while before
// delivering it. Never later than now, so a store clock ahead of this one cannot delay
// the first heartbeat.
func leaseStart(t *store.Task, now time.Time, lease time.Duration) time.Time {
	if t.LeaseExpiresAt == nil {
		return now
	}
	if start := t.LeaseExpiresAt.Add(-lease); start.Before(now) {
		return start
	}
	return now
}

func (x *executor) run(ctx context.Context, e *inflight) {
	defer x.wg.Done()
	defer x.w.capacity.release(e.task.Queue, 1)
	defer e.cancel(nil)
	handedOver := false
	defer func() {
		if !handedOver {
			x.w.committer.handlerGone() // no outcome to submit (abandoned, lease lost)
		}
	}()

	w := x.w
	t := e.task
	entry, ok := w.cfg.Mux.lookup(t.Kind)

	var err error
	var output json.RawMessage // the handler's result (Job.SetOutput), kept on success
	sctx, span := w.startAttempt(ctx, e)
	e.span = span.SpanContext()
	if !ok {
		w.counters.noHandler.Add(1)
		err = noHandlerError(t.Kind)
		endAttempt(span, err, false)
	} else {
		timeout := cmp.Or(entry.opts.timeout, w.cfg.DefaultTimeout)
		if t.TimeoutSeconds > 0 {
			timeout = time.Duration(t.TimeoutSeconds) * time.Second
		}
		actx := sctx // ctx with the attempt's span, for the handler's own spans
		if timeout > 0 {
			var cancel context.CancelFunc
			actx, cancel = context.WithTimeoutCause(sctx, timeout, &timeoutError{d: timeout})
			defer cancel()
		}
		w.counters.running.Add(1)
		start := time.Now()
		var abandoned bool
		abandoned, output, err = x.callWatched(actx, e, entry.wrapped, start)
		w.counters.running.Add(-1)
		if abandoned {
			endAttempt(span, err, true)
			return // the lease will expire; the deferred calls free the slot
		}
		err = explain(actx, err)
		endAttempt(span, err, false)
		w.cfg.Observer.HandlerDone(t, time.Since(start), err)
	}
	e.finished.Store(true)

	if e.leaseLost.Load() {
		w.log.Info("handler finished after its lease was lost; outcome dropped", append(taskAttrs(t), "error", errString(err))...)
		return
	}
	o := x.outcome(ctx, e, entry.opts, output, err)
	// Counted gone before the outcome is queued, so that the committer, taking it, sees
	// whether another handler's outcome may still come (committer.busy).
	handedOver = true
	w.committer.handlerGone()
	if !w.committer.submit(pendingOutcome{e: e, o: o, submitted: time.Now()}) {
		// A handler that returned after shutdown stopped the committer (it outlasted the
		// grace bound but not AbandonGrace) gets here; its lease will expire and the
		// reaper will retry the task.
		w.registry.remove(e)
		w.log.Warn("outcome dropped: the worker has stopped", append(taskAttrs(t), "outcome", o.Kind)...)
	}
}

// Handler goroutine states, for the handshake between a handler returning and the
// executor abandoning it: whichever moves the state first decides.
const (
	handlerRunning int32 = iota
	handlerReturned
	handlerAbandoned
)

// callWatched runs the handler in a goroutine of its own and waits for it. Once actx has
// ended (timeout, cancel request, lost lease, shutdown) it waits AbandonGrace more; a
// handler still running then ignores its context, and is abandoned: callWatched reports
// abandoned and the handler's eventual result is dropped (lateReturn). output is what
// the handler set with Job.SetOutput, nil unless err is nil.
func (x *executor) callWatched(actx context.Context, e *inflight, h Handler, start time.Time) (abandoned bool, output json.RawMessage, err error) {
	type result struct {
		output json.RawMessage
		err    error
	}
	var state atomic.Int32
	done := make(chan result, 1)
	go func() {
		job := &Job{Task: *e.task}
		err := x.call(actx, h, job)
		if state.CompareAndSwap(handlerRunning, handlerReturned) {
			var r result
			r.output, r.err = job.result(err)
			done <- r
			return
		}
		x.lateReturn(e, err, time.Since(start))
	}()
	var r result
	select {
	case r = <-done:
		return false, r.output, r.err
	case <-actx.Done():
	}
	grace := time.NewTimer(x.w.cfg.AbandonGrace)
	defer grace.Stop()
	select {
	case r = <-done:
		return false, r.output, r.err
	case <-grace.C:
	}
	if !state.CompareAndSwap(handlerRunning, handlerAbandoned) {
		r = <-done // it returned just now
		return false, r.output, r.err
	}
	x.abandon(actx, e)
	return true, nil, nil
}

// abandon gives up an attempt whose handler ignores its ended context: the task leaves
// the registry, so heartbeats stop, the lease expires and a reaper (of any worker, this
// one's included) retries or cancels it elsewhere. The caller frees the slot: the
// goroutine cannot be stopped, but it no longer counts against capacity.
func (x *executor) abandon(actx context.Context, e *inflight) {
	w := x.w
	e.abandoned.Store(true)
	w.registry.remove(e)
	w.counters.abandoned.Add(1)
	w.counters.abandonedRunning.Add(1)
	w.cfg.Observer.HandlerAbandoned(e.task)
	w.log.Error("handler ignores its ended context; abandoning it (its lease will expire and a reaper retries the task)",
		append(taskAttrs(e.task), "reason", errString(context.Cause(actx)), "grace", w.cfg.AbandonGrace)...)
}

// lateReturn is an abandoned handler returning at last. Its outcome is never written:
// the task's lease has expired or will, and the reaper owns what happens next (the lease
// token fences a write anyway).
func (x *executor) lateReturn(e *inflight, err error, took time.Duration) {
	w := x.w
	w.counters.abandonedRunning.Add(-1)
	w.cfg.Observer.AbandonedHandlerReturned(e.task, took)
	w.log.Warn("abandoned handler returned; its outcome is dropped",
		append(taskAttrs(e.task), "took", took, "error", errString(err))...)
}

// call runs the handler, turning a panic into a retryable error with the stack.
func (x *executor) call(ctx context.Context, h Handler, job *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			x.w.counters.panics.Add(1)
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return h.Work(ctx, job)
}

// outcome maps the handler's result to what the store should record.
func (x *executor) outcome(ctx context.Context, e *inflight, opts kindOptions, output json.RawMessage, err error) store.Outcome {
	cfg := &x.w.cfg
	o := store.Outcome{TaskID: e.task.ID, LeaseToken: e.task.LeaseToken}
	if err == nil {
		// Even when a cancel was requested meanwhile: the work is done, and says so.
		o.Kind = store.Succeed
		o.Output = output
		return o
	}
	o.Error = store.TruncateError(err.Error())
	switch {
	case e.cancelRequested.Load():
		// Whatever the handler returned, it stopped because of the cancel.
		o.Kind = store.Cancel
	case IsPermanent(err):
		o.Kind = store.Fail
	default:
		o.Kind = store.Retry
		// Due times are durations: the store adds them to the database's now(), so a
		// worker whose clock is off still waits exactly as long (DESIGN.md section 9).
		if d, ok := retryAfterDelay(err); ok {
			o.RetryIn = d
		} else if context.Cause(ctx) == errShutdown {
			// Not the task's fault: the attempt does not count (a task on its last attempt
			// must not go DEAD in a deploy), and it is due again at once, for another worker.
			o.Kind = store.Release
			if !errors.Is(err, errShutdown) { // the handler returned an error of its own
				o.Error = store.TruncateError(fmt.Errorf("%w: %w", errShutdown, err).Error())
			}
		} else {
			base := cmp.Or(opts.backoffBase, cfg.BackoffBase)
			ceiling := cmp.Or(opts.backoffMax, max(cfg.BackoffMax, base))
			o.RetryIn = store.Backoff(e.task.AttemptCount, base, ceiling, rand.Float64)
		}
	}
	return o
}

// explain prefixes a context error with the reason the context ended (timeout, cancel
// request, shutdown), which "context canceled" alone does not say.
func explain(ctx context.Context, err error) error {
	if err == nil || (!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(err, cause) || cause == context.Canceled || cause == context.DeadlineExceeded {
		return err
	}
	return fmt.Errorf("%w: %w", cause, err)
}

// waitTimeout waits up to d for every handler goroutine to return; it reports whether
// they did.
func (x *executor) waitTimeout(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		x.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func taskAttrs(t *store.Task) []any {
	return []any{"task_id", t.ID, "queue", t.Queue, "kind", t.Kind, "attempt", t.AttemptCount}
}
