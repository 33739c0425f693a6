package schedule

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// overdue creates a schedule of every minute with catch-up policy c whose next run was
// minutes ago.
func overdue(t *testing.T, st *memory.Store, name string, c store.CatchUp, minutes int) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.CreateSchedule(ctx, store.ScheduleParams{Name: name, CronSpec: "* * * * *", CatchUp: c,
		Task: store.TaskTemplate{Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Minute).Add(-time.Duration(minutes) * time.Minute)
	if _, err := st.RescheduleSchedule(ctx, name, at); err != nil {
		t.Fatal(err)
	}
}

func TestPassClaimsUntilBatchShort(t *testing.T) {
	st := memory.New()
	for i := range 5 {
		overdue(t, st, fmt.Sprintf("s%d", i), store.CatchUpOne, 1)
	}
	var events []ClaimEvent
	s := NewScheduler(Config{Store: st, Batch: 2, Logger: quiet, OnClaim: func(ev ClaimEvent) { events = append(events, ev) }})
	if runs := s.Pass(context.Background()); runs != 5 {
		t.Fatalf("Pass enqueued %d runs, want 5 (one per schedule)", runs)
	}
	st1 := s.Stats()
	if st1.Claims != 3 || st1.SchedulesClaimed != 5 || st1.RunsEnqueued != 5 || st1.ClaimErrors != 0 {
		t.Fatalf("stats after a pass over 5 due schedules in batches of 2: %+v", st1)
	}
	if st1.ClaimLatency <= 0 || st1.MaxClaimLatency < st1.LastClaimLatency || st1.ClaimLatency < st1.MaxClaimLatency {
		t.Fatalf("latency stats: %+v", st1)
	}
	if len(events) != 3 || events[0].Schedules != 2 || events[2].Schedules != 1 {
		t.Fatalf("OnClaim events: %+v", events)
	}
	// Nothing due: one call, nothing claimed.
	if runs := s.Pass(context.Background()); runs != 0 {
		t.Fatalf("second Pass enqueued %d runs", runs)
	}
	if got := s.Stats().Claims; got != 4 {
		t.Fatalf("Claims = %d after an empty pass, want 4", got)
	}
}

func TestPassCountsSkippedTicks(t *testing.T) {
	st := memory.New()
	overdue(t, st, "behind", store.CatchUpSkip, 9) // 10 or 11 due ticks
	s := NewScheduler(Config{Store: st, Logger: quiet})
	if runs := s.Pass(context.Background()); runs != 0 {
		t.Fatalf("catch-up skip enqueued %d runs", runs)
	}
	if st := s.Stats(); st.TicksSkipped < 10 || st.SchedulesClaimed != 1 {
		t.Fatalf("stats: %+v, want at least 10 skipped ticks", st)
	}
}

func TestRunClaimsDueSchedules(t *testing.T) {
	st := memory.New()
	s := NewScheduler(Config{Store: st, Interval: 10 * time.Millisecond, Logger: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()

	overdue(t, st, "a", store.CatchUpOne, 2)
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().RunsEnqueued < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the loop never claimed the due schedule")
		}
		time.Sleep(5 * time.Millisecond)
	}
	runs, _, err := st.ListScheduleRuns(context.Background(), store.ScheduleRunsParams{Name: "a"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs of a: %d, %v; want 1", len(runs), err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

type failingStore struct {
	store.ScheduleStore
	mu    sync.Mutex
	calls int
}

func (f *failingStore) ClaimDueSchedules(ctx context.Context, p store.ClaimSchedulesParams) ([]store.ScheduleClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return nil, errors.New("database on fire")
}

func TestPassSurvivesErrors(t *testing.T) {
	fs := &failingStore{ScheduleStore: memory.New()}
	var got []ClaimEvent
	s := NewScheduler(Config{Store: fs, Logger: quiet, OnClaim: func(ev ClaimEvent) { got = append(got, ev) }})
	if runs := s.Pass(context.Background()); runs != 0 {
		t.Fatalf("Pass with a failing store enqueued %d runs", runs)
	}
	if st := s.Stats(); st.ClaimErrors != 1 || st.Claims != 0 {
		t.Fatalf("stats after a failed claim: %+v", st)
	}
	if len(got) != 1 || got[0].Err == nil || fs.calls != 1 {
		t.Fatalf("OnClaim events %+v, %d calls; want one failed call (no retry within the pass)", got, fs.calls)
	}
}

func TestDefaults(t *testing.T) {
	s := NewScheduler(Config{Store: memory.New(), Batch: 1 << 20})
	if s.cfg.Interval != DefaultInterval || s.cfg.Batch != store.MaxListLimit || s.cfg.Logger == nil {
		t.Fatalf("defaults: %+v", s.cfg)
	}
	s = NewScheduler(Config{Store: memory.New()})
	if s.cfg.Batch != DefaultBatch {
		t.Fatalf("default batch %d", s.cfg.Batch)
	}
}
