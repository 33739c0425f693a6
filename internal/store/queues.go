package store

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"
)

// Queues are objects with settings (DESIGN.md section 11): kept in the database and
// applied by every claim, cluster-wide, for every kind of worker. A queue needs no task
// to be configured, and a queue nobody configured has the defaults (not paused, no
// limits). A setting takes effect for every claim that starts after the call that set
// it returned: claims read the settings in their own statement, never from a cache.

// Limits on queue settings and group keys.
const (
	MaxGroupKeyLength = 128       // characters
	MaxQueueLimit     = 1_000_000 // concurrency and rate limit values
	MaxRatePeriod     = 24 * 3600 // seconds in a rate window
)

// RateLimit allows at most Limit claims in any PerSeconds-second window, sliding; a
// claim's time is its task's processing_started_at (the database's clock at the claim).
type RateLimit struct {
	Limit      int
	PerSeconds int
}

// QueueSettings is one queue's row of rota.queues, or the defaults for a queue without
// one. A nil limit means no limit.
type QueueSettings struct {
	Queue            string
	Paused           bool
	Concurrency      *int       // tasks of the queue PROCESSING at once, across all workers
	Rate             *RateLimit // claims of the queue per window
	GroupConcurrency *int       // tasks of one group_key PROCESSING at once
	GroupRate        *RateLimit // claims of one group_key per window
	// UpdatedAt is when the settings last changed (the store's clock); nil for a queue
	// nobody configured.
	UpdatedAt *time.Time
}

// Limited reports whether any setting holds claims back.
func (q *QueueSettings) Limited() bool {
	return q.Paused || q.Concurrency != nil || q.Rate != nil || q.GroupConcurrency != nil || q.GroupRate != nil
}

// Change sets one limit: To nil removes the limit.
type Change[T any] struct{ To *T }

// QueuePatch changes some of a queue's settings; nil fields stay as they are.
type QueuePatch struct {
	Paused           *bool
	Concurrency      *Change[int]
	Rate             *Change[RateLimit]
	GroupConcurrency *Change[int]
	GroupRate        *Change[RateLimit]
}

// Validate checks the values a patch sets (the adapters call it before writing).
func (p QueuePatch) Validate() error {
	if err := validCount("concurrency", p.Concurrency); err != nil {
		return err
	}
	if err := validCount("group_concurrency", p.GroupConcurrency); err != nil {
		return err
	}
	if err := validRate("rate", p.Rate); err != nil {
		return err
	}
	return validRate("group_rate", p.GroupRate)
}

// Apply returns s with the patch's changes (Validate first).
func (p QueuePatch) Apply(s QueueSettings) QueueSettings {
	if p.Paused != nil {
		s.Paused = *p.Paused
	}
	if p.Concurrency != nil {
		s.Concurrency = clonePtr(p.Concurrency.To)
	}
	if p.Rate != nil {
		s.Rate = clonePtr(p.Rate.To)
	}
	if p.GroupConcurrency != nil {
		s.GroupConcurrency = clonePtr(p.GroupConcurrency.To)
	}
	if p.GroupRate != nil {
		s.GroupRate = clonePtr(p.GroupRate.To)
	}
	return s
}

func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

func validCount(field string, c *Change[int]) error {
	if c == nil || c.To == nil {
		return nil
	}
	if n := *c.To; n < 1 || n > MaxQueueLimit {
		return fmt.Errorf("%w: %s must be between 1 and %d (null for no limit), got %d", ErrInvalid, field, MaxQueueLimit, n)
	}
	return nil
}

func validRate(field string, c *Change[RateLimit]) error {
	if c == nil || c.To == nil {
		return nil
	}
	r := *c.To
	if r.Limit < 1 || r.Limit > MaxQueueLimit {
		return fmt.Errorf("%w: %s.limit must be between 1 and %d, got %d", ErrInvalid, field, MaxQueueLimit, r.Limit)
	}
	if r.PerSeconds < 1 || r.PerSeconds > MaxRatePeriod {
		return fmt.Errorf("%w: %s.per_seconds must be between 1 and %d, got %d", ErrInvalid, field, MaxRatePeriod, r.PerSeconds)
	}
	return nil
}

// ValidateGroupKey checks a task's group key: "" (none) or 1 to MaxGroupKeyLength
// characters of valid UTF-8 without NUL (PostgreSQL text refuses both).
func ValidateGroupKey(key string) error {
	switch {
	case key == "":
		return nil
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: group_key is not valid UTF-8", ErrInvalid)
	case utf8.RuneCountInString(key) > MaxGroupKeyLength:
		return fmt.Errorf("%w: group_key is longer than %d characters", ErrInvalid, MaxGroupKeyLength)
	}
	for _, r := range key {
		if r == 0 {
			return fmt.Errorf("%w: group_key contains a NUL character", ErrInvalid)
		}
	}
	return nil
}

// QueueSettingsStore keeps the queue settings; both adapters implement it.
type QueueSettingsStore interface {
	// GetQueueSettings returns a queue's settings: the defaults (UpdatedAt nil) for a
	// queue nobody configured, whether or not it has tasks. ErrInvalid for a bad name.
	GetQueueSettings(ctx context.Context, queue string) (*QueueSettings, error)
	// UpdateQueueSettings applies patch to the queue's settings (creating its row) and
	// returns them. Invalid name or values: ErrInvalid, nothing written. Every claim
	// that starts after it returned obeys the new settings.
	UpdateQueueSettings(ctx context.Context, queue string, patch QueuePatch) (*QueueSettings, error)
	// ListQueueSettings returns every configured queue's settings, by name.
	ListQueueSettings(ctx context.Context) ([]*QueueSettings, error)
}
