package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// TestCommitterIntervalCountsFromSubmission: a batch waits CommitInterval from its first
// outcome's submission. An outcome that already waited that long (behind the previous
// write) is written at once with what is queued; a fresh one still waits for company.
func TestCommitterIntervalCountsFromSubmission(t *testing.T) {
	w := &Worker{cfg: Config{Concurrency: 10, CommitBatch: 100, CommitInterval: time.Hour}}
	c := newCommitter(w)
	outcome := func(submitted time.Time) pendingOutcome {
		return pendingOutcome{
			e:         &inflight{task: &store.Task{Queue: "q"}},
			o:         store.Outcome{TaskID: uuid.New()},
			submitted: submitted,
		}
	}
	c.in <- outcome(time.Now())

	got := make(chan []pendingOutcome, 1)
	go func() { got <- c.collect(context.Background(), outcome(time.Now().Add(-2*time.Hour))) }()
	select {
	case batch := <-got:
		if len(batch) != 2 {
			t.Errorf("batch of %d outcomes, want the late one and the queued one", len(batch))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a batch whose first outcome waited past CommitInterval was not written at once")
	}

	// A fresh first outcome waits for the interval (here: until the context ends).
	ctx, cancel := context.WithCancel(context.Background())
	go func() { got <- c.collect(ctx, outcome(time.Now())) }()
	select {
	case <-got:
		t.Fatal("a fresh batch was written before CommitInterval")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	<-got
}
