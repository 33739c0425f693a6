package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// retentionBatch bounds one delete statement, so clean-up never holds many row locks or
// one long transaction; passes repeat while batches come back full.
const retentionBatch = 1000

// RetentionConfig configures a Retention loop.
type RetentionConfig struct {
	Store store.Store // required
	// Interval between passes. Required (> 0).
	Interval time.Duration
	// SucceededAfter: SUCCEEDED and CANCELED tasks are deleted this long after they
	// completed. 0 keeps them forever.
	SucceededAfter time.Duration
	// FailedAfter: DEAD and FAILED tasks (with their attempts and dead letters) are
	// deleted this long after they completed; operators need them longer. 0 keeps them.
	FailedAfter time.Duration
	Logger      *slog.Logger // default slog.Default()
	Now         func() time.Time
}

// Retention deletes finished tasks past their retention every Interval.
type Retention struct {
	cfg RetentionConfig
}

func NewRetention(cfg RetentionConfig) *Retention {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Retention{cfg: cfg}
}

// Run deletes until ctx ends. With both retentions 0 it returns at once.
func (r *Retention) Run(ctx context.Context) {
	if r.cfg.SucceededAfter <= 0 && r.cfg.FailedAfter <= 0 {
		return
	}
	loop.Every(ctx, r.cfg.Interval, func(ctx context.Context) { r.Pass(ctx) })
}

// Pass deletes every task currently past retention and returns how many.
func (r *Retention) Pass(ctx context.Context) int {
	now := r.cfg.Now()
	params := store.RetentionParams{Limit: retentionBatch}
	if r.cfg.SucceededAfter > 0 {
		params.SucceededBefore = now.Add(-r.cfg.SucceededAfter)
	}
	if r.cfg.FailedAfter > 0 {
		params.FailedBefore = now.Add(-r.cfg.FailedAfter)
	}
	total := 0
	for ctx.Err() == nil {
		n, err := r.cfg.Store.DeleteFinishedTasks(ctx, params)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("retention clean-up failed", "error", err)
			}
			break
		}
		total += n
		if n < retentionBatch {
			break
		}
	}
	if total > 0 {
		r.cfg.Logger.Info("deleted finished tasks past retention", "count", total)
	}
	return total
}
