package store

import (
	"fmt"
	"time"
)

// EnqueueParams asks Store.EnqueueDue for up to Limit tasks of Queue that need an SQS
// message (SQS mode: the queue carries task ids, the database decides).
//
// A task needs a message when it is
//   - PENDING and due (scheduled_for <= now): it was never sent;
//   - ENQUEUED, due, and not sent since it became due (enqueued_at is NULL): a retry
//     whose backoff has passed or a task the lease reaper returned. Both outcomes clear
//     enqueued_at, because the worker deletes the old message once it has recorded the
//     outcome;
//   - ENQUEUED and last sent more than RedeliverAfter ago: its message looks lost. SQS
//     may lose messages; a duplicate is harmless (workers delete messages for tasks they
//     cannot claim).
//
// Order: highest priority first, then oldest scheduled_for, then id.
//
// Locking: the tasks handed to send stay locked until EnqueueDue returns (PostgreSQL: row
// locks taken with SKIP LOCKED), so concurrent callers never hand the same task to send
// in the same round, and a worker claiming one of the ids (ClaimParams.TaskIDs) before
// the mark commits waits for it rather than finding the task still PENDING. So send must
// not wait for such a claim itself. When more tasks need a message than Limit, the
// PostgreSQL store may lock up to Limit more of them than it hands to send (one batch
// per kind of need); those stay eligible and are skipped by other callers only until
// this call ends.
//
// Failures: send returns the ids it sent; only ids it was handed and reports are marked,
// the rest stay as they were and are handed out again next call. send's error is
// returned (wrapped) after the reported ids are marked and committed. If ctx ends or
// the database fails after send succeeded, nothing is marked and the tasks stay
// eligible: the next call sends them again, and the duplicate message is harmless.
type EnqueueParams struct {
	Queue          string        // "" = DefaultQueue
	Limit          int           // tasks per call, 1 to MaxListLimit
	RedeliverAfter time.Duration // > 0: re-send an ENQUEUED task last sent longer ago than this
}

// Normalize fills the default queue and validates the params; adapters call it before
// touching anything and return its ErrInvalid without calling send.
func (p *EnqueueParams) Normalize() error {
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	if p.Limit < 1 || p.Limit > MaxListLimit {
		return fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrInvalid, MaxListLimit, p.Limit)
	}
	if p.RedeliverAfter <= 0 {
		return fmt.Errorf("%w: redeliver after must be positive, got %s", ErrInvalid, p.RedeliverAfter)
	}
	return nil
}

// PublishParams selects the dead letters a PublishDeadLetters call hands out.
type PublishParams struct {
	// Queues are the Rota queues whose dead letters are handed out (required: the queues
	// an SQS-mode server serves).
	Queues []string
	// Limit is the most dead letters handed out at once, 1..MaxListLimit.
	Limit int
}

// Validate reports bad params as ErrInvalid.
func (p PublishParams) Validate() error {
	if len(p.Queues) == 0 {
		return fmt.Errorf("%w: at least one queue is required", ErrInvalid)
	}
	for _, q := range p.Queues {
		if err := ValidateName("queue", q); err != nil {
			return err
		}
	}
	if p.Limit < 1 || p.Limit > MaxListLimit {
		return fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrInvalid, MaxListLimit, p.Limit)
	}
	return nil
}

// CountSentParams asks Store.CountSent about Queues.
type CountSentParams struct {
	Queues []string // at least one
	// OlderThan leaves out tasks sent in the last OlderThan (>= 0): their messages may
	// not show in SQS's approximate counts yet.
	OlderThan time.Duration
	// Limit caps each queue's count (1 to MaxCountSent), so that a deep backlog costs a
	// bounded index scan: a caller comparing counts needs no more than it can act on.
	Limit int
}

// MaxCountSent is the highest CountSentParams.Limit.
const MaxCountSent = 100_000

// Validate reports bad params as ErrInvalid.
func (p CountSentParams) Validate() error {
	if len(p.Queues) == 0 {
		return fmt.Errorf("%w: at least one queue is required", ErrInvalid)
	}
	for _, q := range p.Queues {
		if err := ValidateName("queue", q); err != nil {
			return err
		}
	}
	if p.OlderThan < 0 {
		return fmt.Errorf("%w: older than must not be negative, got %s", ErrInvalid, p.OlderThan)
	}
	if p.Limit < 1 || p.Limit > MaxCountSent {
		return fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrInvalid, MaxCountSent, p.Limit)
	}
	return nil
}
