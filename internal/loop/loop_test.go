package loop_test

import (
	"context"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/loop"
)

func TestEveryRunsPassesUntilCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	passes := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() {
		loop.Every(ctx, time.Millisecond, func(context.Context) { passes <- struct{}{} })
		close(done)
	}()
	for range 3 {
		select {
		case <-passes:
		case <-time.After(10 * time.Second):
			t.Fatal("no pass")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after cancel")
	}
}

func TestJitterStaysWithinTenPercent(t *testing.T) {
	for range 1000 {
		if d := loop.Jitter(time.Second); d < 900*time.Millisecond || d > 1100*time.Millisecond {
			t.Fatalf("Jitter(1s) = %v", d)
		}
	}
}
