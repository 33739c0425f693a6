package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rotaqueue/rota/internal/store"
)

// RegisterWorker upserts a worker's row; see store.WorkerRegistry.
func (s *Store) RegisterWorker(ctx context.Context, p store.RegisterParams) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.Normalize(); err != nil {
		return fmt.Errorf("register worker: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if s.workers == nil {
		s.workers = map[string]*store.Worker{}
	}
	for id, w := range s.workers {
		if w.LastSeenAt.Before(now.Add(-store.WorkerPruneAfter)) {
			delete(s.workers, id)
		}
	}
	w := p.Worker
	w.Queues = slices.Clone(w.Queues)
	w.Kinds = slices.Clone(w.Kinds) // nil stays nil: unknown
	slices.Sort(w.Kinds)
	w.StartedAt, w.LastSeenAt = now, now
	if old := s.workers[w.ID]; old != nil {
		if !old.LastSeenAt.Before(now.Add(-store.DefaultWorkerExpiry)) {
			w.StartedAt = old.StartedAt // a live row keeps its start; an expired one starts afresh
		}
		if p.MergeQueues {
			w.Queues = append(w.Queues, old.Queues...)
		}
	}
	slices.Sort(w.Queues)
	w.Queues = slices.Compact(w.Queues)
	if w.Queues == nil {
		w.Queues = []string{}
	}
	s.workers[w.ID] = &w
	return nil
}

// DeregisterWorker deletes a worker's row; see store.WorkerRegistry.
func (s *Store) DeregisterWorker(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.workers, id)
	return nil
}

// ListWorkers returns the live workers; see store.WorkerRegistry.
func (s *Store) ListWorkers(ctx context.Context, p store.WorkerListParams) ([]store.Worker, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	live := p.LiveWithin
	if live <= 0 {
		live = store.DefaultWorkerExpiry
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := s.clock().Add(-live)
	out := []store.Worker{}
	for _, w := range s.workers {
		if !w.LastSeenAt.After(cutoff) || (p.Queue != "" && !slices.Contains(w.Queues, p.Queue)) {
			continue
		}
		c := *w
		c.Queues, c.Kinds = slices.Clone(w.Queues), slices.Clone(w.Kinds)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b store.Worker) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
