package memory

import (
	"context"
	"slices"
)

// wakeBuffer is how many wake-ups a slow subscriber may have pending before further
// ones are dropped (wake-ups are best-effort; workers poll as a fallback).
const wakeBuffer = 64

// WaitForTasks returns a channel that receives a queue name whenever due tasks arrive in
// it (inserted, retried or reaped due now, or replayed); it is closed when ctx ends or
// the store is closed. A send never blocks the store: a full channel misses wake-ups.
func (s *Store) WaitForTasks(ctx context.Context) (<-chan string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan string, wakeBuffer)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(ch)
		return ch, nil
	}
	id := s.nextSub
	s.nextSub++
	s.subs[id] = ch
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c, ok := s.subs[id]; ok {
			delete(s.subs, id)
			close(c)
		}
	})
	return ch, nil
}

// notify sends each queue name to every subscriber, without blocking. Callers hold s.mu.
func (s *Store) notify(queues map[string]bool) {
	if len(queues) == 0 || len(s.subs) == 0 {
		return
	}
	names := make([]string, 0, len(queues))
	for q := range queues {
		names = append(names, q)
	}
	slices.Sort(names)
	for _, ch := range s.subs {
		for _, q := range names {
			select {
			case ch <- q:
			default:
			}
		}
	}
}
