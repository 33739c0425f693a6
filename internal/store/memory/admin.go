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
		if t.CompletedAt == nil || t.FlowID != uuid.Nil { // a flow's tasks go with it, below
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
	for _, fe := range s.finishedFlows(p) {
		for _, st := range fe.steps {
			for _, e := range st.tasks {
				doomed[e.task.ID] = true
			}
		}
		delete(s.flows, fe.flow.ID)
		if s.flowKeys[fe.flow.IdempotencyKey] == fe {
			delete(s.flowKeys, fe.flow.IdempotencyKey)
		}
		s.flowIDs = slices.DeleteFunc(s.flowIDs, func(id uuid.UUID) bool { return id == fe.flow.ID })
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

// finishedFlows returns up to p.Limit ended flows past retention whose tasks all ended,
// oldest completion first (as delete_finished_flows.sql picks them).
func (s *Store) finishedFlows(p store.RetentionParams) []*flowEntry {
	var out []*flowEntry
	for _, fe := range s.flows {
		cut := p.SucceededBefore
		switch fe.flow.Status {
		case store.FlowRunning:
			continue
		case store.FlowFailed:
			cut = p.FailedBefore
		}
		if cut.IsZero() || !fe.flow.CompletedAt.Before(cut) || flowRuns(fe) {
			continue
		}
		out = append(out, fe)
	}
	slices.SortFunc(out, func(a, b *flowEntry) int { return a.flow.CompletedAt.Compare(*b.flow.CompletedAt) })
	return out[:min(len(out), p.Limit)]
}

// flowRuns reports whether a task of the flow has not ended yet.
func flowRuns(fe *flowEntry) bool {
	for _, st := range fe.steps {
		for _, e := range st.tasks {
			if !e.task.Status.Terminal() {
				return true
			}
		}
	}
	return false
}
