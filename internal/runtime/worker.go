// Package runtime is Rota's worker runtime: it claims tasks from a Store (poll mode) or
// takes them from a Source (SQS mode, internal/sqsmode), runs them with the handlers of a
// Mux and records their outcomes.
//
// The pipeline, one background loop per file:
//
//	listener, idle watcher ─┐ (wake-ups)
//	fetcher (per queue) ────┴─> executor (bounded goroutines) ─> committer (batched writes)
//	  or Source.Fetch                                             then Source.Settle
//	heartbeater: extends the leases of in-flight tasks, delivers cancel requests
//	reaper: returns tasks whose lease expired to the queue
//
// Every loop has the same shape, run(ctx), returning when ctx ends; Worker.Run starts
// them and stops them in the order written down there.
package runtime

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/rotaqueue/rota/internal/tracing"
)

// Worker claims and runs tasks until Run's context ends.
type Worker struct {
	cfg      Config
	log      *slog.Logger
	counters counters
	ran      atomic.Bool
	tracer   trace.Tracer

	stopRun context.CancelCauseFunc // ends Run early with a fatal error (see fail)

	capacity  *capacity
	registry  *registry
	cancels   *recentCancels
	outage    *outage
	fetchers  map[string]*fetcher
	listener  *listener
	idle      *idleWatcher
	executor  *executor
	committer *committer
	heartbeat *heartbeater
	// backlogLoops counts the claiming loops (of every queue) whose last claim came back
	// full or that wait for slots: while it is 0 no queue has a backlog, and the
	// committer may write beside the write in flight (committer.spareWriter).
	backlogLoops atomic.Int32
	reaper       *reaper
	presence     *presence
}

// NewWorker checks cfg, fills its defaults and returns a worker ready to Run.
func NewWorker(cfg Config) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The worker owns its copy of the queue map: the caller's may change later.
	limits := make(map[string]int, len(cfg.Queues))
	for q := range cfg.Queues {
		limits[q] = cfg.queueLimit(q)
	}
	cfg.Queues = limits

	w := &Worker{
		cfg:      cfg,
		log:      cfg.Logger.With("worker_id", cfg.WorkerID),
		tracer:   cfg.TracerProvider.Tracer(tracing.Name),
		capacity: newCapacity(cfg.Concurrency, limits),
		registry: newRegistry(),
		cancels:  newRecentCancels(cfg.LeaseDuration),
		fetchers: make(map[string]*fetcher, len(limits)),
	}
	for q := range limits {
		w.fetchers[q] = newFetcher(w, q)
	}
	w.listener = &listener{w: w}
	w.idle = &idleWatcher{w: w}
	w.outage = newOutage(w)
	w.executor = &executor{w: w}
	w.committer = newCommitter(w)
	w.heartbeat = &heartbeater{w: w}
	w.reaper = &reaper{w: w}
	w.presence = &presence{w: w}
	return w, nil
}

// ID returns the worker id written into the tasks it claims.
func (w *Worker) ID() string { return w.cfg.WorkerID }

// Run claims and runs tasks until ctx ends, then shuts down gracefully and returns nil.
// It returns early, after the same shutdown, with an error that retrying cannot fix
// (the store rejecting the worker's claims as invalid). It may be called once.
//
// Shutdown order, and why:
//
//  1. Stop fetching: the fetchers, the listener and the reaper stop with ctx, and Run
//     waits for them, so no task is claimed after this point.
//  2. Let running handlers finish, for up to ShutdownGrace. Then cancel their contexts
//     (their outcome is a retry, due at once) and wait up to another grace bound for them
//     to return; a handler that ignores its context is abandoned, and its lease expires
//     so a reaper retries the task.
//  3. Flush the committer: every outcome handed over is written (retrying transient
//     errors, for at most the grace bound).
//  4. Stop heartbeats: until its outcome is written a task's lease must stay alive,
//     or a reaper could hand it to another worker while it finishes here.
//  5. Leave the workers registry last (presence.go): until then the worker still
//     serves its queues.
func (w *Worker) Run(ctx context.Context) error {
	if !w.ran.CompareAndSwap(false, true) {
		return errors.New("runtime: Worker.Run called more than once")
	}
	cfg := &w.cfg
	log := w.log
	parent := ctx
	ctx, w.stopRun = context.WithCancelCause(ctx)
	defer w.stopRun(nil)
	log.Info("worker starting", "queues", cfg.Queues, "concurrency", cfg.Concurrency,
		"kinds", cfg.Mux.Kinds(), "claim_from", cfg.ClaimFrom)

	// Each later stage has its own context, detached from ctx (keeping its values), so
	// it outlives the fetchers by exactly as long as the order above says.
	detached := context.WithoutCancel(ctx)
	handlersCtx, cancelHandlers := context.WithCancelCause(detached)
	defer cancelHandlers(nil)
	commitCtx, stopCommitter := context.WithCancel(detached)
	defer stopCommitter()
	heartbeatCtx, stopHeartbeat := context.WithCancel(detached)
	defer stopHeartbeat()
	w.executor.base = handlersCtx
	w.outage.ctx = heartbeatCtx // probing may be needed until the last heartbeat

	presenceCtx, stopPresence := context.WithCancel(detached)
	defer stopPresence()

	var presenceDone, heartbeatDone, commitDone, fetchDone sync.WaitGroup
	presenceDone.Go(func() { w.presence.run(presenceCtx) })
	heartbeatDone.Go(func() { w.heartbeat.run(heartbeatCtx) })
	commitDone.Go(func() { w.committer.run(commitCtx) })
	fetchDone.Go(func() { w.reaper.run(ctx) })
	// The listener runs with a Source too, for cancel requests; the idle watcher does
	// not: a Source waits for work itself. Fetching starts once the listener has tried to
	// subscribe (for at most listenStartWait), so that a cancel request of a task claimed
	// here cannot come before the worker listens.
	subscribed := make(chan struct{})
	fetchDone.Go(func() { w.listener.run(ctx, subscribed) })
	select {
	case <-subscribed:
	case <-time.After(listenStartWait):
	}
	if w.idleWatched() {
		fetchDone.Go(func() { w.idle.run(ctx) })
	}
	for _, q := range slices.Sorted(maps.Keys(w.fetchers)) {
		f := w.fetchers[q]
		for range cfg.FetchLoops {
			fetchDone.Go(func() { f.run(ctx) })
		}
	}

	<-ctx.Done()
	log.Info("worker stopping", "running", w.counters.running.Load(), "grace", cfg.ShutdownGrace)

	// 1. Stop fetching.
	fetchDone.Wait()

	// 2. Let handlers finish, then cancel the rest.
	if !w.executor.waitTimeout(max(cfg.ShutdownGrace, 0)) {
		log.Warn("grace period over; cancelling running handlers", "running", w.counters.running.Load())
		cancelHandlers(errShutdown)
		if !w.executor.waitTimeout(cfg.graceBound()) {
			log.Error("handlers ignored cancellation; abandoning them (their leases will expire)",
				"running", w.counters.running.Load())
		}
	}

	// 3. Flush outcomes.
	stopCommitter()
	commitDone.Wait()

	// 4. Stop heartbeats (and the outage probe, which runs on their context).
	stopHeartbeat()
	heartbeatDone.Wait()
	w.outage.stop()

	// 5. Leave the registry.
	stopPresence()
	presenceDone.Wait()
	w.presence.deregister(detached)

	if n := w.registry.len(); n > 0 {
		log.Warn("worker stopped with unrecorded outcomes; their leases will expire", "count", n)
	}
	log.Info("worker stopped", "stats", w.Stats())
	if cause := context.Cause(ctx); cause != context.Cause(parent) { // ended by fail
		return cause
	}
	return nil
}

// listenStartWait bounds how long Run waits for the listener's first subscription
// before it claims (a database that hangs on connect must not hold the worker back).
const listenStartWait = 5 * time.Second

// fail stops Run with err, through the same graceful shutdown.
func (w *Worker) fail(err error) {
	w.log.Error("worker stopping on a fatal error", "error", err)
	w.stopRun(err)
}
