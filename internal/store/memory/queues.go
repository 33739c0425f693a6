package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/rotaqueue/rota/internal/store"
)

// GetQueueSettings returns a queue's settings; see store.QueueSettingsStore.
func (s *Store) GetQueueSettings(ctx context.Context, queue string) (*store.QueueSettings, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.ValidateName("queue", queue); err != nil {
		return nil, fmt.Errorf("get queue settings: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneQueueSettings(s.queueSettings(queue)), nil
}

// UpdateQueueSettings applies a patch; see store.QueueSettingsStore.
func (s *Store) UpdateQueueSettings(ctx context.Context, queue string, patch store.QueuePatch) (*store.QueueSettings, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.ValidateName("queue", queue); err != nil {
		return nil, fmt.Errorf("update queue settings: %w", err)
	}
	if err := patch.Validate(); err != nil {
		return nil, fmt.Errorf("update queue settings: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := patch.Apply(*s.queueSettings(queue))
	now := s.clock()
	q.UpdatedAt = &now
	if s.queues == nil {
		s.queues = map[string]*store.QueueSettings{}
	}
	s.queues[queue] = &q
	if !q.Paused {
		// A resume or a raised limit may let due tasks run: wake the queue's waiters
		// rather than leave them to their poll interval.
		s.notify(map[string]bool{queue: true})
	}
	return cloneQueueSettings(&q), nil
}

// ListQueueSettings returns every configured queue; see store.QueueSettingsStore.
func (s *Store) ListQueueSettings(ctx context.Context) ([]*store.QueueSettings, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*store.QueueSettings, 0, len(s.queues))
	for _, q := range s.queues {
		out = append(out, cloneQueueSettings(q))
	}
	slices.SortFunc(out, func(a, b *store.QueueSettings) int { return cmp.Compare(a.Queue, b.Queue) })
	return out, nil
}

// queueSettings is queue's settings, the defaults when nobody configured it. Callers
// hold s.mu and must not change the result.
func (s *Store) queueSettings(queue string) *store.QueueSettings {
	if q := s.queues[queue]; q != nil {
		return q
	}
	return &store.QueueSettings{Queue: queue}
}

func cloneQueueSettings(q *store.QueueSettings) *store.QueueSettings {
	c := *q
	c.Concurrency, c.GroupConcurrency = clonePtr(q.Concurrency), clonePtr(q.GroupConcurrency)
	c.Rate, c.GroupRate = clonePtr(q.Rate), clonePtr(q.GroupRate)
	if q.UpdatedAt != nil {
		t := *q.UpdatedAt
		c.UpdatedAt = &t
	}
	return &c
}

func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}
