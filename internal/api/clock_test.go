package api

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// TestSkewedServerClockDoesNotMoveDueTimes (issue #12 item 4, DESIGN.md section 9): a
// server whose clock is 10 minutes slow or fast schedules delay_seconds and
// retry_after_seconds by the store's clock. The store writes created_at (on a create) and
// updated_at (on an outcome) with the same now() it adds the delay to, so the difference
// is the delay to the microsecond; a due time computed by the server's clock was 10
// minutes off (and, even with clocks that agree, never exactly the delay).
func TestSkewedServerClockDoesNotMoveDueTimes(t *testing.T) {
	const backoff = time.Minute // base = max: the server's backoff is within [0, 1 min]
	for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
		t.Run(fmt.Sprintf("clock %+v", skew), func(t *testing.T) {
			adapters.Each(t, func(t *testing.T, st store.Store) {
				c := newClient(t, Config{Store: st, BackoffBase: backoff, BackoffMax: backoff,
					Now: func() time.Time { return time.Now().Add(skew) }})

				delayed := c.createTask(map[string]any{"kind": "later", "delay_seconds": 30})
				exactly(t, "delay_seconds", delayed.ScheduledFor.Sub(delayed.CreatedAt), 30*time.Second)
				var batch tasksJSON
				c.do("POST", "/api/tasks/batch", map[string]any{"tasks": []any{map[string]any{"kind": "later", "delay_seconds": 1.5}}}).
					want(t, http.StatusCreated, &batch)
				exactly(t, "a batch's delay_seconds", batch.Tasks[0].ScheduledFor.Sub(batch.Tasks[0].CreatedAt), 1500*time.Millisecond)

				c.createTask(map[string]any{"kind": "now", "queue": "q", "max_attempts": 5})
				claimed := c.claimOne("q")
				var snoozed taskJSON
				c.do("POST", "/api/tasks/"+claimed.ID.String()+"/fail", map[string]any{"lease_token": claimed.LeaseToken,
					"error": "rate limited", "retry_after_seconds": 45}).want(t, http.StatusOK, &snoozed)
				exactly(t, "retry_after_seconds", snoozed.ScheduledFor.Sub(snoozed.UpdatedAt), 45*time.Second)

				// The snoozed task is not due: a second task takes the backoff path.
				c.createTask(map[string]any{"kind": "now", "queue": "q", "max_attempts": 5})
				claimed = c.claimOne("q")
				var retried taskJSON
				c.do("POST", "/api/tasks/"+claimed.ID.String()+"/fail", map[string]any{"lease_token": claimed.LeaseToken,
					"error": "boom"}).want(t, http.StatusOK, &retried)
				if d := retried.ScheduledFor.Sub(retried.UpdatedAt); d < 0 || d > backoff {
					t.Errorf("backoff: due %s after the outcome by the store's clock, want within [0, %s]", d, backoff)
				}
			})
		})
	}
}

func exactly(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got != want {
		t.Errorf("%s: due %s after the write by the store's clock, want exactly %s", what, got, want)
	}
}

// TestSkewedServerClockDoesNotAgeTheQueue: a queue's oldest_pending_seconds is measured
// by the database's clock in PostgreSQL (Store.NextDue), so a server clock an hour fast
// does not add an hour to it.
func TestSkewedServerClockDoesNotAgeTheQueue(t *testing.T) {
	st := postgres.New(pgtest.NewPool(t))
	t.Cleanup(st.Close)
	c := newClient(t, Config{Store: st, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	c.createTask(map[string]any{"kind": "k", "queue": "q", "scheduled_for": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)})
	if got := c.queue("q").OldestPendingSeconds; got < 55 || got > 300 {
		t.Fatalf("oldest_pending_seconds = %v with a server clock an hour fast, want about 60", got)
	}
	var list queuesJSON
	c.do("GET", "/api/queues", nil).want(t, http.StatusOK, &list)
	if len(list.Queues) != 1 || list.Queues[0].OldestPendingSeconds > 300 {
		t.Fatalf("GET /api/queues = %+v", list.Queues)
	}
}
