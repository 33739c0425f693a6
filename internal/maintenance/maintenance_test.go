package maintenance_test

import (
	"context"
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
