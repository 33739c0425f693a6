package rota

import (
	"context"
	"fmt"

	"github.com/rotaqueue/rota/internal/store"
)

// QueueSettings are a queue's flow-control settings, kept in the database and applied
// by every claim, cluster-wide, for every kind of worker: Paused (no claims),
// Concurrency (tasks of the queue running at once), Rate (claims per sliding window, by
// the database's clock), and GroupConcurrency and GroupRate, the same per
// EnqueueParams.GroupKey. A nil limit means no limit. A queue nobody configured has the
// defaults (UpdatedAt nil).
type QueueSettings = store.QueueSettings

// RateLimit allows at most Limit claims in any PerSeconds-second window, sliding.
type RateLimit = store.RateLimit

// QueuePatch changes some of a queue's settings; nil fields stay as they are. A
// Change's To nil removes that limit: QueuePatch{Rate: &Change[RateLimit]{}} removes
// the rate limit, QueuePatch{Concurrency: &Change[int]{To: &five}} sets one.
type QueuePatch = store.QueuePatch

// Change sets one limit of a QueuePatch: To nil removes it.
type Change[T any] = store.Change[T]

// Limits of queue settings and group keys.
const (
	MaxGroupKeyLength = store.MaxGroupKeyLength // characters of EnqueueParams.GroupKey
	MaxQueueLimit     = store.MaxQueueLimit     // concurrency and rate limit values
	MaxRatePeriod     = store.MaxRatePeriod     // seconds in a rate window
)

// QueueSettings returns a queue's settings: the defaults for one nobody configured,
// whether or not it has tasks.
func (c *Client) QueueSettings(ctx context.Context, queue string) (*QueueSettings, error) {
	return wrapQueue("get queue " + queue)(c.store.GetQueueSettings(ctx, queue))
}

// Queues lists the settings of every configured queue, by name.
func (c *Client) Queues(ctx context.Context) ([]*QueueSettings, error) {
	qs, err := c.store.ListQueueSettings(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return qs, nil
}

// UpdateQueue applies p to a queue's settings (a queue needs no task to be configured)
// and returns them. Every claim that starts after it returned obeys them. Invalid values
// are an error wrapping ErrInvalid, and nothing is changed.
func (c *Client) UpdateQueue(ctx context.Context, queue string, p QueuePatch) (*QueueSettings, error) {
	return wrapQueue("update queue " + queue)(c.store.UpdateQueueSettings(ctx, queue, p))
}

// PauseQueue stops every claim of the queue's tasks until ResumeQueue; running tasks
// finish.
func (c *Client) PauseQueue(ctx context.Context, queue string) (*QueueSettings, error) {
	paused := true
	return wrapQueue("pause queue " + queue)(c.store.UpdateQueueSettings(ctx, queue, QueuePatch{Paused: &paused}))
}

// ResumeQueue lets claims take a paused queue's tasks again.
func (c *Client) ResumeQueue(ctx context.Context, queue string) (*QueueSettings, error) {
	paused := false
	return wrapQueue("resume queue " + queue)(c.store.UpdateQueueSettings(ctx, queue, QueuePatch{Paused: &paused}))
}

func wrapQueue(what string) func(*QueueSettings, error) (*QueueSettings, error) {
	return func(q *QueueSettings, err error) (*QueueSettings, error) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return q, nil
	}
}
