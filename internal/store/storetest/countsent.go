package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
)

// CountSent: what SQS should hold a message for, per queue (sqsmode's loss watch).
var countSentTests = []testCase{
	{"CountsSentEnqueuedOnly", testCountSentWhat},
	{"OlderThanAndLimit", testCountSentWindow},
	{"InvalidParams", testCountSentInvalid},
}

func countSent(t *testing.T, s store.Store, p store.CountSentParams) map[string]int {
	t.Helper()
	got, err := s.CountSent(ctx(t), p)
	if err != nil {
		t.Fatalf("CountSent(%+v): %v", p, err)
	}
	return got
}

func wantCounts(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for q, n := range want {
		if c, ok := got[q]; !ok || c != n {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

// testCountSentWhat: sent ENQUEUED tasks count; PENDING, claimed and other queues' do
// not; a queue with none is there with 0.
func testCountSentWhat(t *testing.T, s store.Store) {
	createN(t, s, "cs", "k", 4)
	createN(t, s, "cs-other", "k", 2)
	enqueueAll(t, s, enqueueParams("cs-other"))
	sent := enqueueAll(t, s, enqueueParams("cs"))
	if len(sent) != 4 {
		t.Fatalf("sent %d tasks, want 4", len(sent))
	}
	createN(t, s, "cs", "k", 3) // PENDING: no message yet
	claimID(t, s, get(t, s, sent[0]), store.StatusEnqueued, 30*time.Second)

	p := store.CountSentParams{Queues: []string{"cs", "cs-other", "cs-empty"}, Limit: 100}
	wantCounts(t, "sent tasks", countSent(t, s, p), map[string]int{"cs": 3, "cs-other": 2, "cs-empty": 0})
}

// testCountSentWindow: tasks sent within OlderThan are left out, and Limit caps a count.
func testCountSentWindow(t *testing.T, s store.Store) {
	createN(t, s, "cw", "k", 5)
	enqueueAll(t, s, enqueueParams("cw"))
	p := store.CountSentParams{Queues: []string{"cw"}, OlderThan: time.Hour, Limit: 100}
	wantCounts(t, "sent just now, older than an hour", countSent(t, s, p), map[string]int{"cw": 0})
	p.OlderThan = 0
	waitFor(t, "the sends to be in the past", func() bool { return countSent(t, s, p)["cw"] == 5 })
	p.Limit = 2
	wantCounts(t, "limit 2", countSent(t, s, p), map[string]int{"cw": 2})
}

func testCountSentInvalid(t *testing.T, s store.Store) {
	for _, p := range []store.CountSentParams{
		{Limit: 1},
		{Queues: []string{"bad queue"}, Limit: 1},
		{Queues: []string{"q"}, Limit: 0},
		{Queues: []string{"q"}, Limit: store.MaxCountSent + 1},
		{Queues: []string{"q"}, Limit: 1, OlderThan: -time.Second},
	} {
		if _, err := s.CountSent(ctx(t), p); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CountSent(%+v): got %v, want ErrInvalid", p, err)
		}
	}
}
