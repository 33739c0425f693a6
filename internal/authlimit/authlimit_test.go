package authlimit

import (
	"fmt"
	"testing"
	"time"
)

func TestWrongTokensBlockTheClientForAWhile(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(3, 10*time.Second, func() time.Time { return now })
	const guesser, other = "198.51.100.9:4000", "198.51.100.10:4000"

	for i := range 3 {
		if blocked, _ := l.Blocked(guesser); blocked {
			t.Fatalf("blocked after %d wrong tokens, want 3 allowed", i)
		}
		l.Failed(fmt.Sprintf("198.51.100.9:%d", 5000+i)) // a new port each time: the same client
	}
	blocked, retry := l.Blocked(guesser)
	if !blocked || retry != 10*time.Second {
		t.Fatalf("after 3 wrong tokens: blocked %v, retry after %s; want true and 10s", blocked, retry)
	}
	if blocked, _ := l.Blocked(other); blocked {
		t.Fatal("another client is blocked too")
	}

	now = now.Add(4 * time.Second)
	if blocked, retry := l.Blocked(guesser); !blocked || retry != 6*time.Second {
		t.Fatalf("4s later: blocked %v, retry after %s; want true and 6s", blocked, retry)
	}
	now = now.Add(6 * time.Second)
	if blocked, _ := l.Blocked(guesser); blocked {
		t.Fatal("still blocked once a wrong token's budget came back")
	}
	l.Failed(guesser)
	if blocked, _ := l.Blocked(guesser); !blocked {
		t.Fatal("one refilled token, used: want blocked again")
	}
}

func TestForgetsClientsWhoseBudgetIsWhole(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(2, time.Second, func() time.Time { return now })
	for i := range maxIdleClients {
		l.Failed(fmt.Sprintf("10.0.%d.%d:1", i/256, i%256))
	}
	now = now.Add(time.Minute) // every budget is whole again
	l.Failed("192.0.2.1:1")
	if n := len(l.clients); n != 1 {
		t.Fatalf("%d clients remembered, want only the new one", n)
	}
}
