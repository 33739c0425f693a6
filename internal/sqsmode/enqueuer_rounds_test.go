package sqsmode_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/sqsmode"
	"github.com/rotaqueue/rota/internal/store"
)

// overlapStore holds every round after the first in its send until want rounds are
// sending at once, so a test can tell that the enqueuer overlaps rounds: if it never
// did, the held rounds would never send. It records the most rounds seen sending at once.
type overlapStore struct {
	store.Store
	want int

	mu         sync.Mutex
	rounds     int
	sending    int
	maxSending int
	overlapped chan struct{} // closed once want rounds were sending at once
}

func (s *overlapStore) EnqueueDue(ctx context.Context, p store.EnqueueParams,
	send func(context.Context, []uuid.UUID) ([]uuid.UUID, error)) (int, error) {
	return s.Store.EnqueueDue(ctx, p, func(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
		s.mu.Lock()
		s.rounds++
		first := s.rounds == 1
		s.sending++
		s.maxSending = max(s.maxSending, s.sending)
		if s.sending == s.want {
			select {
			case <-s.overlapped:
			default:
				close(s.overlapped)
			}
		}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.sending--
			s.mu.Unlock()
		}()
		if !first { // the first round finds the backlog; the others must overlap
			select {
			case <-s.overlapped:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return send(ctx, ids)
	})
}

func TestABacklogIsSentByOverlappingRounds(t *testing.T) {
	t.Parallel()
	e := newSQSEnv(t)
	qs := e.queues(true)
	const rounds = 3
	st := &overlapStore{Store: e.store, want: rounds, overlapped: make(chan struct{})}
	enq := e.enqueuer(qs, nil, func(c *sqsmode.EnqueuerConfig) {
		c.Store = st
		c.BatchSize = 20
		c.RoundsPerQueue = rounds
	})
	ids := e.createN(300, store.CreateParams{Kind: "noop"})

	stop := run(t, enq.Run)
	e.waitAll(ids, store.StatusEnqueued)
	stop()

	st.mu.Lock()
	maxSending := st.maxSending
	st.mu.Unlock()
	if maxSending != rounds {
		t.Errorf("at most %d rounds sent at once, want exactly RoundsPerQueue = %d", maxSending, rounds)
	}
	seen := map[string]int{}
	for _, b := range e.receiveAll(e.url("rota")) {
		seen[b]++
	}
	for _, id := range ids {
		if seen[id.String()] != 1 {
			t.Errorf("task %s was sent %d times, want once", id, seen[id.String()])
		}
	}
	if len(seen) != len(ids) {
		t.Errorf("%d distinct ids in the queue for %d tasks", len(seen), len(ids))
	}
}
