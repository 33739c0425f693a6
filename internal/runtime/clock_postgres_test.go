package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

// TestSkewedWorkerClockDoesNotMoveDueTimes (issue #12 item 4, DESIGN.md section 9): a
// worker whose clock is 10 minutes slow or fast retries and snoozes exactly like one whose
// clock is right, against a real PostgreSQL. The database's now() at the outcome is the
// attempt row's finished_at (same statement), so scheduled_for - finished_at is the delay
// the worker asked for, whatever its clock says. With due times computed as the worker's
// now + delay, a slow worker retried at once (and burnt its attempts) and a fast one
// waited 10 minutes too long.
func TestSkewedWorkerClockDoesNotMoveDueTimes(t *testing.T) {
	const (
		backoff = time.Minute // base = max: the full-jitter backoff is within [0, 1 min]
		snooze  = 45 * time.Second
		exact   = time.Millisecond // finished_at and scheduled_for come from one now()
	)
	for _, skew := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
		t.Run(fmt.Sprintf("clock %+v", skew), func(t *testing.T) {
			t.Parallel()
			st := postgres.New(pgtest.NewPool(t))
			t.Cleanup(st.Close)
			mux := runtime.NewMux()
			mux.HandleFunc("fails", func(context.Context, *runtime.Job) error { return errors.New("boom") })
			mux.HandleFunc("snoozes", func(context.Context, *runtime.Job) error {
				return runtime.RetryAfter(snooze, errors.New("rate limited"))
			})
			cfg := testConfig(t)
			cfg.Store = st
			cfg.BackoffBase, cfg.BackoffMax = backoff, backoff
			cfg.Now = func() time.Time { return time.Now().Add(skew) }
			h := newHarness(t, mux, cfg)
			ids := h.create(store.CreateParams{Kind: "fails", MaxAttempts: 5}, store.CreateParams{Kind: "snoozes", MaxAttempts: 5})
			h.start()
			for _, id := range ids {
				poll.Until(t, "the first attempt's outcome", waitTimeout, 10*time.Millisecond, func() bool { return lastOutcome(t, st, id) != nil })
			}
			h.stop()

			failed, snoozed := h.get(ids[0]), h.get(ids[1])
			for _, task := range []*store.Task{failed, snoozed} {
				if task.Status != store.StatusPending || task.AttemptCount != 1 {
					t.Errorf("%s: %s after %d attempts, want PENDING after 1 (waiting, not run again)", task.Kind, task.Status, task.AttemptCount)
				}
			}
			if d := failed.ScheduledFor.Sub(*lastOutcome(t, st, ids[0]).FinishedAt); d < 0 || d > backoff {
				t.Errorf("retry due %s after the outcome by the database's clock, want within [0, %s]", d, backoff)
			}
			if d := snoozed.ScheduledFor.Sub(*lastOutcome(t, st, ids[1]).FinishedAt); d < snooze-exact || d > snooze+exact {
				t.Errorf("snooze due %s after the outcome by the database's clock, want %s", d, snooze)
			}
		})
	}
}

// lastOutcome returns the latest finished attempt of a task, nil when none has finished.
func lastOutcome(t *testing.T, s store.Store, id uuid.UUID) *store.Attempt {
	t.Helper()
	attempts, err := s.ListAttempts(context.Background(), id)
	if err != nil {
		t.Fatalf("ListAttempts: %v", err)
	}
	var last *store.Attempt
	for i := range attempts {
		if attempts[i].FinishedAt != nil {
			last = &attempts[i]
		}
	}
	return last
}
