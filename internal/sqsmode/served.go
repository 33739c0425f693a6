package sqsmode

import (
	"context"
	"time"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// serveEvery is how often an enqueuer renews its claim to its queues (±10%): six times within
// store.DefaultServedFor, so a few failed renewals (a database blip) do not let it lapse.
const serveEvery = store.DefaultServedFor / 6

// markServed records in the database that this enqueuer serves its Rota queues, which
// makes them SQS-mode queues for every process (docs/architecture.md, "How a queue's mode
// is decided"): while a queue is served, the reapers leave its ENQUEUED tasks alone. Called
// once before the first round, so no task this enqueuer sends is ever in an unserved queue.
func (e *Enqueuer) markServed(ctx context.Context) error {
	return e.cfg.Store.ServeQueues(ctx, store.ServeParams{EnqueuerID: e.id,
		Queues: e.cfg.Queues.RotaQueues(), For: store.DefaultServedFor})
}

// keepServed renews the mark until ctx ends, then withdraws it so that the reapers hand
// the queues' ENQUEUED tasks to poll workers at once if no other enqueuer serves them (a
// queue moved to poll mode). A crashed enqueuer's mark lapses instead.
func (e *Enqueuer) keepServed(ctx context.Context) {
	loop.Repeat(ctx, serveEvery, func(ctx context.Context) {
		if err := e.markServed(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("could not renew this enqueuer's queues", "error", err)
		}
	})
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := e.cfg.Store.ServeQueues(stop, store.ServeParams{EnqueuerID: e.id,
		Queues: e.cfg.Queues.RotaQueues(), For: 0})
	if err != nil {
		e.log.Warn("could not withdraw this enqueuer's queues; they stay SQS-mode until the mark lapses",
			"lapses_in", store.DefaultServedFor.String(), "error", err)
	}
}
