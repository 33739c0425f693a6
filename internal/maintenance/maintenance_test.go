package maintenance_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/maintenance"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

func TestReaperPassReturnsExpiredLeases(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	if _, err := s.CreateTasks(ctx, []store.CreateParams{{Kind: "k"}, {Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w", Limit: 2, LeaseDuration: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var reported int
	r := maintenance.NewReaper(maintenance.ReaperConfig{Store: s, Interval: time.Second,
		BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, OnReap: func(n int) { reported += n }})
	deadline := time.Now().Add(5 * time.Second)
	total := 0
	for total < 2 && time.Now().Before(deadline) {
		total += r.Pass(ctx)
	}
	if total != 2 || reported != 2 {
		t.Fatalf("reaped %d (reported %d), want 2", total, reported)
	}
}

func TestRetentionPassKeepsFailedLonger(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	res, err := s.CreateTasks(ctx, []store.CreateParams{{Kind: "ok"}, {Kind: "bad", MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending, WorkerID: "w", Limit: 2, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	var outcomes []store.Outcome
	for _, c := range claimed {
		kind := store.Succeed
		if c.Kind == "bad" {
			kind = store.Retry
		}
		outcomes = append(outcomes, store.Outcome{TaskID: c.ID, LeaseToken: c.LeaseToken, Kind: kind, Error: "x"})
	}
	if _, err := s.RecordOutcomes(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	// An hour from now: past the 1-minute retention of successes, not the 1-day one of failures.
	later := time.Now().Add(time.Hour)
	r := maintenance.NewRetention(maintenance.RetentionConfig{Store: s, Interval: time.Minute,
		SucceededAfter: time.Minute, FailedAfter: 24 * time.Hour, Now: func() time.Time { return later }})
	if n := r.Pass(ctx); n != 1 {
		t.Fatalf("deleted %d, want 1 (the success)", n)
	}
	if _, err := s.GetTask(ctx, res[0].Task.ID); err == nil {
		t.Fatal("the succeeded task is still there")
	}
	if task, err := s.GetTask(ctx, res[1].Task.ID); err != nil || task.Status != store.StatusDead {
		t.Fatalf("the dead task: %v %v", task, err)
	}
}

// lookBackStore records each reap call's ExpiredWithin and fails the failAt-th call.
type lookBackStore struct {
	store.Store
	mu     sync.Mutex
	within []time.Duration
	failAt int
}

func (s *lookBackStore) ReapExpiredLeases(_ context.Context, p store.ReapParams) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.within = append(s.within, p.ExpiredWithin)
	if len(s.within) == s.failAt {
		return 0, errors.New("the database is away")
	}
	return 0, nil
}

func (s *lookBackStore) calls() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.within)
}

// TestReaperLooksBackFullyNowAndThen: Run's first pass looks at every expired lease, the
// next eleven only a minute back, the twelfth at every one again; so does the pass after
// a failed one, and the count restarts from it.
func TestReaperLooksBackFullyNowAndThen(t *testing.T) {
	s := &lookBackStore{Store: memory.New(), failAt: 20}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		maintenance.NewReaper(maintenance.ReaperConfig{Store: s, Interval: time.Millisecond,
			BackoffBase: time.Second, BackoffMax: time.Second}).Run(ctx)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(s.calls()) < 40 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	calls := s.calls()
	if len(calls) < 40 {
		t.Fatalf("%d reap calls in 30 s", len(calls))
	}
	for i, got := range calls[:40] {
		call := i + 1
		full := call == 1 || call == 13 || call == 21 || call == 33 // 21: after the failed 20th
		if want := time.Duration(0); full && got != want {
			t.Errorf("call %d looked back %s, want every expired lease", call, got)
		} else if !full && got != time.Minute {
			t.Errorf("call %d looked back %s, want a minute", call, got)
		}
	}
}
