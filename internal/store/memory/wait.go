package memory

import (
	"context"
	"slices"

	"github.com/rotaqueue/rota/internal/store"
)

// wakeBuffer is how many wake-ups a slow subscriber may have pending before further
// ones are dropped (wake-ups are best-effort; workers poll as a fallback).
const wakeBuffer = 64

// WaitForTasks returns a channel that receives a queue name whenever due tasks arrive in
// it (inserted, retried or reaped due now, or replayed); it is closed when ctx ends or
// the store is closed. A send never blocks the store: a full channel misses wake-ups.
func (s *Store) WaitForTasks(ctx context.Context) (<-chan string, error) {
	return subscribe(ctx, s, s.subs)
}

// Listen subscribes to due-task, cancel-request notifications; see store.Store. The
// memory store never loses its subscription, so it never sends ListenResumed.
func (s *Store) Listen(ctx context.Context) (<-chan store.Notification, error) {
	return subscribe(ctx, s, s.listeners)
}

// subscribe adds a buffered channel to subs (s.subs or s.listeners) until ctx ends, when
// it is removed and closed; on a closed store the channel comes back closed.
func subscribe[T any](ctx context.Context, s *Store, subs map[int]chan T) (<-chan T, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan T, wakeBuffer)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		close(ch)
		return ch, nil
	}
	id := s.nextSub
	s.nextSub++
	subs[id] = ch
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c, ok := subs[id]; ok {
			delete(subs, id)
			close(c)
		}
	})
	return ch, nil
}

// broadcast sends n to every Listen subscriber, without blocking. Callers hold s.mu.
func (s *Store) broadcast(n store.Notification) {
	for _, ch := range s.listeners {
		select {
		case ch <- n:
		default:
		}
	}
}

// notify sends each queue name to every subscriber, without blocking. Callers hold s.mu.
func (s *Store) notify(queues map[string]bool) {
	if len(queues) == 0 || (len(s.subs) == 0 && len(s.listeners) == 0) {
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
	for _, q := range names {
		s.broadcast(store.Notification{Kind: store.TasksDue, Queue: q})
	}
}
