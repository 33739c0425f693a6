package store

import (
	"fmt"
	"time"
)

// A queue's delivery mode is decided by the database (docs/architecture.md, "How a
// queue's mode is decided"): a queue is in SQS mode while an SQS enqueuer serves it, as
// recorded with ServeQueues, and in poll mode otherwise. A task waiting to run is PENDING
// in either mode; only an enqueuer's send makes it ENQUEUED.

// DefaultServedFor is how long one ServeQueues call keeps a queue in SQS mode. An
// enqueuer renews it several times within that; a crashed one lets it lapse, after which
// the reapers return the queue's ENQUEUED tasks to PENDING (RequeueUnserved). A minute
// rides out a restart without re-sending a backlog, and bounds how long tasks wait when a
// queue's last SQS server is gone for good.
const DefaultServedFor = time.Minute

// ServeParams says that the SQS enqueuer EnqueuerID sends the tasks of Queues for the
// next For, by the database clock. For = 0 withdraws the claim (a graceful stop).
type ServeParams struct {
	EnqueuerID string
	Queues     []string
	For        time.Duration
}

// Normalize validates the params; adapters call it before touching anything.
func (p *ServeParams) Normalize() error {
	switch {
	case p.EnqueuerID == "":
		return fmt.Errorf("%w: an enqueuer id is required", ErrInvalid)
	case p.For < 0:
		return fmt.Errorf("%w: For must not be negative, got %s", ErrInvalid, p.For)
	}
	for _, q := range p.Queues {
		if err := ValidateName("queue", q); err != nil {
			return err
		}
	}
	return nil
}
