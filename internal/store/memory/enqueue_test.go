package memory

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// enqueueRound runs one EnqueueDue that reports everything sent and returns the ids.
func enqueueRound(t *testing.T, s *Store, p store.EnqueueParams) []uuid.UUID {
	t.Helper()
	var handed []uuid.UUID
	n, err := s.EnqueueDue(context.Background(), p, func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
		handed = slices.Clone(ids)
		return ids, nil
	})
	if err != nil || n != len(handed) {
		t.Fatalf("EnqueueDue: marked %d of %d, %v", n, len(handed), err)
	}
	return handed
}

// TestEnqueueDueClock drives due times, backoff and the redelivery timeout with a fake
// clock: each task is handed out exactly when it needs a message, not before.
func TestEnqueueDueClock(t *testing.T) {
	s := New()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	ctx := context.Background()
	res, err := s.CreateTasks(ctx, []store.CreateParams{{Kind: "a"}, {Kind: "b", ScheduledFor: now.Add(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := res[0].Task.ID, res[1].Task.ID
	p := store.EnqueueParams{Limit: 10, RedeliverAfter: 5 * time.Minute}

	if got := enqueueRound(t, s, p); !slices.Equal(got, []uuid.UUID{a}) {
		t.Fatalf("at 12:00 sent %v, want a", got)
	}
	now = now.Add(time.Minute)
	if got := enqueueRound(t, s, p); !slices.Equal(got, []uuid.UUID{b}) {
		t.Fatalf("at 12:01 sent %v, want b", got)
	}
	now = now.Add(5 * time.Minute) // a was sent 6 minutes ago, b 5 (not more than 5)
	if got := enqueueRound(t, s, p); !slices.Equal(got, []uuid.UUID{a}) {
		t.Fatalf("at 12:06 sent %v, want a again", got)
	}
	now = now.Add(time.Microsecond)
	if got := enqueueRound(t, s, p); !slices.Equal(got, []uuid.UUID{b}) {
		t.Fatalf("just after 12:06 sent %v, want b again", got)
	}

	// a is claimed and retried in 30s: not sent before its backoff has passed, then
	// sent at once (not after the redelivery timeout).
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Queue: store.DefaultQueue, From: store.StatusEnqueued,
		TaskIDs: []uuid.UUID{a}, WorkerID: "w", LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim a: %v %v", claimed, err)
	}
	if _, err := s.RecordOutcomes(ctx, []store.Outcome{{TaskID: a, LeaseToken: claimed[0].LeaseToken, Kind: store.Retry,
		RetryIn: 30 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(29 * time.Second)
	if got := enqueueRound(t, s, p); len(got) != 0 {
		t.Fatalf("sent %v during a's backoff", got)
	}
	now = now.Add(time.Second)
	if got := enqueueRound(t, s, p); !slices.Equal(got, []uuid.UUID{a}) {
		t.Fatalf("when a's backoff passed sent %v, want a", got)
	}
}

// TestEnqueueIndexesCompacted: a sent task that is claimed leaves a stale item in the
// index of sent tasks; below a valid one (a message not yet looking lost) it is never
// popped, so the index must compact itself.
func TestEnqueueIndexesCompacted(t *testing.T) {
	s := New()
	ctx := context.Background()
	p := store.EnqueueParams{Limit: store.MaxListLimit, RedeliverAfter: time.Hour}
	create := func(n int) []uuid.UUID {
		params := make([]store.CreateParams, n)
		for i := range params {
			params[i] = store.CreateParams{Kind: "k"}
		}
		res, err := s.CreateTasks(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]uuid.UUID, n)
		for i, r := range res {
			out[i] = r.Task.ID
		}
		return out
	}
	create(1)
	enqueueRound(t, s, p) // stays ENQUEUED: the oldest send, on top of the index

	const n, rounds = 1000, 10
	ids := create(n)
	for round := range rounds {
		if got := enqueueRound(t, s, p); len(got) != n {
			t.Fatalf("round %d sent %d tasks, want %d", round, len(got), n)
		}
		claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Queue: store.DefaultQueue, From: store.StatusEnqueued,
			TaskIDs: ids, WorkerID: "w", LeaseDuration: time.Minute})
		if err != nil || len(claimed) != n {
			t.Fatalf("claim: %d, %v", len(claimed), err)
		}
		outcomes := make([]store.Outcome, n)
		for i, task := range claimed {
			outcomes[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Retry}
		}
		if _, err := s.RecordOutcomes(ctx, outcomes); err != nil {
			t.Fatal(err)
		}
	}
	if size := s.enq.sent[store.DefaultQueue].Len(); size > 2*(n+1)+1 {
		t.Fatalf("the sent index holds %d items for %d ENQUEUED tasks after %d rounds", size, n+1, rounds)
	}
}
