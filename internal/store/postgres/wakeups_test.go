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

// TestWakeSenderCooldown: a wake-up after a quiet moment goes out at once; wake-ups that
// come sooner than the cooldown after a statement go out together, one cooldown after it.
func TestWakeSenderCooldown(t *testing.T) {
	t.Parallel()
	// Long, so that "at once" has a wide margin on a loaded machine; the sender sleeps for
	// the gap's lower bound (less the moment between its mark and its send, below).
	const cooldown = time.Second
	type statement struct {
		at     time.Time
		queues []string
	}
	sent := make(chan statement, 10)
	w := newWakeSender(func(_ context.Context, queues []string) {
		sent <- statement{time.Now(), slices.Clone(queues)}
	})
	w.cooldown = cooldown
	defer w.close()

	start := time.Now()
	w.wake([]string{"a"})
	first := <-sent
	if took := first.at.Sub(start); took >= cooldown {
		t.Fatalf("the first wake-up went out after %s, want at once", took)
	}
	for _, q := range []string{"b", "c", "b"} {
		w.wake([]string{q})
	}
	second := <-sent
	// The sender waits a cooldown from the moment it started the first statement, a
	// little before the send function saw it (a CI run once measured 999.96 ms here), so
	// the gap seen from inside may fall short of it by that much; back to back it would be
	// about 0.
	if gap := second.at.Sub(first.at); gap < cooldown-cooldown/10 {
		t.Errorf("second statement %s after the first, want about %s", gap, cooldown)
	}
	if !slices.Equal(second.queues, []string{"b", "c"}) {
		t.Errorf("second statement woke %q, want [b c]", second.queues)
	}
	select {
	case extra := <-sent:
		t.Errorf("a third statement: %q", extra.queues)
	case <-time.After(cooldown + cooldown/2):
	}
	// After a quiet moment, at once again.
	start = time.Now()
	w.wake([]string{"d"})
	if third := <-sent; third.at.Sub(start) >= cooldown {
		t.Errorf("a wake-up after a quiet moment went out after %s", third.at.Sub(start))
	}
}
