package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// CountReplayable counts matching DEAD and FAILED tasks up to atMost; see store.Store.
func (s *Store) CountReplayable(ctx context.Context, p store.ReplayParams, atMost int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := p.ValidateCount(atMost); err != nil {
		return 0, fmt.Errorf("count replayable: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range s.ids {
		if n == atMost {
			break
		}
		t := &s.tasks[id].task
		if (t.Status == store.StatusDead || t.Status == store.StatusFailed) && (p.Queue == "" || t.Queue == p.Queue) &&
			(p.Kind == "" || t.Kind == p.Kind) && (p.Reason == "" || t.Status == p.Reason) {
			n++
		}
	}
	return n, nil
}

// ReplayTasks replays matching DEAD and FAILED tasks, oldest first; see store.Store.
func (s *Store) ReplayTasks(ctx context.Context, p store.ReplayParams) ([]*store.Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("replay tasks: %w", err)
	}
	var only map[uuid.UUID]bool
	if len(p.TaskIDs) > 0 {
		only = make(map[uuid.UUID]bool, len(p.TaskIDs))
		for _, id := range p.TaskIDs {
			only[id] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	// As the postgres adapter does: the first Limit candidates, then of those sharing an
	// idempotency key only the oldest (the younger would break the key's uniqueness).
	var candidates []*entry
	for _, id := range s.ids {
		if len(candidates) == p.Limit {
			break
		}
		e := s.tasks[id]
		t := &e.task
		if (t.Status != store.StatusDead && t.Status != store.StatusFailed) ||
			(only != nil && !only[id]) || (p.Queue != "" && t.Queue != p.Queue) ||
			(p.Kind != "" && t.Kind != p.Kind) || (p.Reason != "" && t.Status != p.Reason) {
			continue
		}
		if holder := s.idempotency[t.IdempotencyKey]; t.IdempotencyKey != "" && holder != nil && holder != e {
			continue // a live task holds the key
		}
		candidates = append(candidates, e)
	}
	var out []*store.Task
	for _, e := range candidates {
		t := &e.task
		if holder := s.idempotency[t.IdempotencyKey]; t.IdempotencyKey != "" && holder != nil && holder != e {
			continue // an older candidate, replayed just now, holds the key
		}
		s.replay(e, now)
		out = append(out, cloneTask(t))
	}
	return out, nil
}

// DeleteFinishedTasks removes finished tasks past retention; see store.Store.
func (s *Store) DeleteFinishedTasks(ctx context.Context, p store.RetentionParams) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if p.Limit < 1 {
		return 0, fmt.Errorf("delete finished tasks: %w: limit must be at least 1", store.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doomed := map[uuid.UUID]bool{}
	for _, id := range s.ids {
		if len(doomed) == p.Limit {
			break
		}
		t := &s.tasks[id].task
		if t.CompletedAt == nil {
			continue
		}
		var cutoff = p.FailedBefore
		switch t.Status {
		case store.StatusSucceeded, store.StatusCanceled:
			cutoff = p.SucceededBefore
		case store.StatusDead, store.StatusFailed:
		default:
			continue
		}
		if !cutoff.IsZero() && t.CompletedAt.Before(cutoff) {
			doomed[id] = true
		}
	}
	for id := range doomed {
		e := s.tasks[id]
		delete(s.tasks, id)
		s.counts[e.task.Queue][e.task.Status]--
		// A finished task holds its idempotency key only when SUCCEEDED.
		if holder := s.idempotency[e.task.IdempotencyKey]; holder == e {
			delete(s.idempotency, e.task.IdempotencyKey)
		}
		// Dead letters go with their task, as ON DELETE CASCADE does. The slot stays
		// (as nil) so that an event's id keeps being its index + 1.
		for _, i := range e.deadLetters {
			s.deadLetters[i] = nil
		}
	}
	if len(doomed) > 0 {
		s.ids = slices.DeleteFunc(s.ids, func(id uuid.UUID) bool { return doomed[id] })
	}
	return len(doomed), nil
}

// Ping reports whether the store is open.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memory store is closed")
	}
	return nil
}
