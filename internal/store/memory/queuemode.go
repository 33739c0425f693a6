package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// ServeQueues records (or, with For = 0, withdraws) an SQS enqueuer's queues.
func (s *Store) ServeQueues(ctx context.Context, p store.ServeParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.Normalize(); err != nil {
		return fmt.Errorf("serve queues: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if s.served == nil {
		s.served = map[string]map[string]time.Time{}
	}
	for _, q := range p.Queues {
		if p.For == 0 {
			delete(s.served[q], p.EnqueuerID)
			continue
		}
		if s.served[q] == nil {
			s.served[q] = map[string]time.Time{}
		}
		s.served[q][p.EnqueuerID] = now.Add(p.For)
	}
	return nil
}

// RequeueUnserved returns ENQUEUED tasks of queues no enqueuer serves to PENDING. The
// memory store walks its tasks (it holds few); PostgreSQL uses an index.
func (s *Store) RequeueUnserved(ctx context.Context, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if limit < 1 {
		return 0, fmt.Errorf("requeue unserved: %w: limit must be at least 1, got %d", store.ErrInvalid, limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	unserved := map[string]bool{}
	for q, counts := range s.counts {
		if counts[store.StatusEnqueued] > 0 && !s.servedAt(q, now) {
			unserved[q] = true
		}
	}
	if len(unserved) == 0 {
		return 0, nil
	}
	n := 0
	wake := map[string]bool{}
	for _, id := range s.ids {
		if n == limit {
			break
		}
		e := s.tasks[id]
		if e == nil || e.task.Status != store.StatusEnqueued || !unserved[e.task.Queue] {
			continue
		}
		s.transition(e, store.StatusPending, now, func(t *store.Task) { t.EnqueuedAt = nil })
		wake[e.task.Queue] = true
		n++
	}
	s.notify(wake)
	return n, nil
}

// servedAt reports whether some enqueuer serves queue q at now.
func (s *Store) servedAt(q string, now time.Time) bool {
	for _, until := range s.served[q] {
		if until.After(now) {
			return true
		}
	}
	return false
}
