package postgres

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestWakeSenderGathersWhileSending: wake never waits for the statement; the queues woken
// while one statement is in flight go out together, once each, in the next; close sends
// what is left, and a wake after close is sent by its caller.
func TestWakeSenderGathersWhileSending(t *testing.T) {
	var mu sync.Mutex
	var sent [][]string
	release := make(chan struct{})
	inFlight := make(chan struct{}, 1)
	w := newWakeSender(func(_ context.Context, queues []string) {
		mu.Lock()
		first := len(sent) == 0
		sent = append(sent, slices.Clone(queues))
		mu.Unlock()
		if first {
			inFlight <- struct{}{}
			<-release // the first statement is slow
		}
	})
	w.wake([]string{"a"})
	<-inFlight
	returned := make(chan struct{})
	go func() {
		for _, q := range []string{"b", "c", "b", "a", "c"} {
			w.wake([]string{q})
		}
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("wake waited for the statement in flight")
	}
	close(release)
	w.close()
	w.wake([]string{"after"})
	want := [][]string{{"a"}, {"b", "c", "a"}, {"after"}}
	if !slices.EqualFunc(sent, want, slices.Equal) {
		t.Errorf("statements sent %q, want %q", sent, want)
	}
}

// TestWakeSenderCloseUnstarted: closing a sender that never woke anyone returns at once.
func TestWakeSenderCloseUnstarted(t *testing.T) {
	w := newWakeSender(func(context.Context, []string) { t.Error("sent") })
	w.close()
	w.close()
}
