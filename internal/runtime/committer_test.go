package runtime

import (
	"context"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/poll"
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

	// A fresh first outcome waits for the interval (here: until the context ends) while
	// a handler still runs whose outcome could join it.
	c.handlerStarted()
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

// TestCommitterWritesAtOnceWhenNoHandlerRuns: a batch waits CommitInterval only while a
// handler runs whose outcome could join it. With none left (the last one's outcome is
// in), it goes at once: under a trickle, the wait bought nothing but latency.
func TestCommitterWritesAtOnceWhenNoHandlerRuns(t *testing.T) {
	w := &Worker{cfg: Config{Concurrency: 10, CommitBatch: 100, CommitInterval: time.Hour}}
	c := newCommitter(w)
	outcome := func() pendingOutcome {
		return pendingOutcome{
			e:         &inflight{task: &store.Task{Queue: "q"}},
			o:         store.Outcome{TaskID: uuid.New()},
			submitted: time.Now(),
		}
	}
	collected := func(what string, got <-chan []pendingOutcome, want int) {
		t.Helper()
		select {
		case batch := <-got:
			if len(batch) != want {
				t.Errorf("%s: batch of %d outcomes, want %d", what, len(batch), want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the batch waited for CommitInterval", what)
		}
	}

	// No handler running: the lone outcome is written at once.
	got := make(chan []pendingOutcome, 1)
	go func() { got <- c.collect(context.Background(), outcome()) }()
	collected("no handler running", got, 1)

	// Two handlers ran; the first one's outcome waits for the second's, which ends the
	// wait (no third is running).
	c.handlerStarted()
	c.handlerStarted()
	c.handlerGone()
	go func() { got <- c.collect(context.Background(), outcome()) }()
	// The collect must have looked at the handlers while the second still ran: one that
	// first looked after it was gone would rightly take only what was queued then (the
	// handler is counted gone just before its outcome is submitted), which made this
	// test fail now and then. Parked in its select, it has.
	poll.Until(t, "the collect waiting for outcomes", 10*time.Second, time.Millisecond, func() bool {
		return parkedInSelect("(*committer).collect", t.Name())
	})
	c.handlerGone()
	c.in <- outcome()
	collected("the last handler's outcome came", got, 2)
}

// parkedInSelect reports whether a goroutine running a closure of the test named test is
// blocked in a select inside the function named fn (as a stack trace names them), so
// that another test's committer cannot pass for this one's.
func parkedInSelect(fn, test string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:goruntime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, fn+"(") && strings.Contains(g, "."+test+".func") {
			return true
		}
	}
	return false
}
