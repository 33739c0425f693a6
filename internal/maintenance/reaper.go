// Package maintenance holds the background loops that keep the task table healthy without
// a leader: the lease reaper and the retention clean-up. Each is safe to run in every
// process at once because the store arbitrates with SKIP LOCKED and conditional updates.
package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// reapBatch is the most expired leases one ReapExpiredLeases call handles; the reaper
// calls again at once while batches come back full.
const reapBatch = 1000

// fullPassEvery: Run's passes look back only reapLookBack(Interval) for expired leases,
// except the first, the one after a failed pass, and every fullPassEvery-th, which look
// at every expired lease. A lease expired longer ago and still unreaped is one an earlier
// pass skipped because another transaction held its task (SKIP LOCKED) and then let it
// go unchanged, or one that expired while no reaper ran; a full pass finds it. The short
// look back keeps a pass cheap while a long transaction holds vacuum back, when the
// expired leases of every version that was ever PROCESSING stay in the index
// (docs/performance.md "Session 13").
const fullPassEvery = 12

// reapLookBack is how far back a pass that is not full looks: several intervals, so
// that a pass that came late (a slow store, a loaded machine) misses nothing that
// expired since the pass before, and at least a minute.
func reapLookBack(interval time.Duration) time.Duration {
	return max(time.Minute, 4*interval)
}

// ReaperConfig configures a Reaper.
type ReaperConfig struct {
	Store store.Store // required
	// Interval between passes. Required (> 0).
	Interval time.Duration
	// BackoffBase and BackoffMax bound the full-jitter delay before a reaped task runs
	// again. Required (> 0).
	BackoffBase, BackoffMax time.Duration
	// OnReap, when set, is called after a pass that reaped n > 0 tasks (a worker uses it
	// to wake its fetchers: reaped tasks may be due now, and no insert announces them).
	OnReap func(n int)
	// Held, when set, is called before each reap call and returns the tasks the caller
	// holds, which are not reaped (store.ReapParams.HeldTaskIDs): a worker passes the
	// tasks it runs or whose outcome it has yet to write, so that after a database outage
	// it never reaps work it finished itself. Nil holds none.
	Held   func() []uuid.UUID
	Logger *slog.Logger // default slog.Default()
}

// Reaper returns tasks whose lease expired (their worker died or froze) to the queue, or
// makes them DEAD or CANCELED, every Interval. In the same pass it returns the ENQUEUED
// tasks of queues no SQS enqueuer serves any more to PENDING (Store.RequeueUnserved), so a
// queue moved from SQS to poll mode, or left without its SQS servers, is worked by the
// poll workers instead of waiting for a message nobody will receive.
type Reaper struct {
	cfg ReaperConfig
	// sinceFull counts Run's passes since its last full one; at fullPassEvery-1 the next
	// pass is full (the first one, and the one after a failed pass).
	sinceFull int
}

func NewReaper(cfg ReaperConfig) *Reaper {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Reaper{cfg: cfg, sinceFull: fullPassEvery - 1}
}

// Run reaps until ctx ends: a full pass first and every fullPassEvery passes, short
// look-back passes between them.
func (r *Reaper) Run(ctx context.Context) {
	loop.Every(ctx, r.cfg.Interval, func(ctx context.Context) { r.scheduledPass(ctx) })
}

func (r *Reaper) scheduledPass(ctx context.Context) {
	within := reapLookBack(r.cfg.Interval)
	if r.sinceFull++; r.sinceFull >= fullPassEvery {
		within, r.sinceFull = 0, 0
	}
	if _, ok := r.pass(ctx, within); !ok {
		r.sinceFull = fullPassEvery - 1
	}
}

// Pass reaps every currently expired lease and returns how many it reaped.
func (r *Reaper) Pass(ctx context.Context) int {
	n, _ := r.pass(ctx, 0)
	return n
}

// pass reaps the leases that expired at most within ago (0: all); ok is false when a
// reap call failed.
func (r *Reaper) pass(ctx context.Context, within time.Duration) (total int, ok bool) {
	ok = true
	for ctx.Err() == nil {
		var held []uuid.UUID
		if r.cfg.Held != nil {
			held = r.cfg.Held()
		}
		n, err := r.cfg.Store.ReapExpiredLeases(ctx, store.ReapParams{
			Limit:         reapBatch,
			BackoffBase:   r.cfg.BackoffBase,
			BackoffMax:    r.cfg.BackoffMax,
			HeldTaskIDs:   held,
			ExpiredWithin: within,
		})
		if err != nil {
			ok = false
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("reap expired leases failed", "error", err)
			}
			break
		}
		total += n
		if n < reapBatch {
			break
		}
	}
	r.requeueUnserved(ctx)
	if total > 0 {
		r.cfg.Logger.Info("reaped expired leases", "count", total)
		if r.cfg.OnReap != nil {
			r.cfg.OnReap(total)
		}
	}
	return total, ok
}

// requeueUnserved returns the ENQUEUED tasks of unserved queues to PENDING, in batches.
// The store announces them, so poll workers wake at once.
func (r *Reaper) requeueUnserved(ctx context.Context) {
	total := 0
	for ctx.Err() == nil {
		n, err := r.cfg.Store.RequeueUnserved(ctx, reapBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("requeue tasks of queues no SQS enqueuer serves failed", "error", err)
			}
			break
		}
		total += n
		if n < reapBatch {
			break
		}
	}
	if total > 0 {
		r.cfg.Logger.Info("returned ENQUEUED tasks of queues no SQS enqueuer serves to PENDING", "count", total)
	}
}
