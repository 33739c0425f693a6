// Package loop runs the periodic background passes of Rota's leaderless loops (lease
// reaper, retention clean-up, schedule claiming) with one shape: a first pass soon after
// start, then one every interval, jittered so a fleet started together drifts apart.
package loop

import (
	"context"
	"math/rand/v2"
	"time"
)

// Every calls pass soon after start (at a tenth of the interval: a restart after a crash
// recovers quickly) and then every interval, each wait jittered by ±10%, until ctx ends.
func Every(ctx context.Context, interval time.Duration, pass func(context.Context)) {
	run(ctx, Jitter(interval)/10, interval, pass)
}

// Repeat calls pass every interval, each wait jittered by ±10%, the first one interval
// after start, until ctx ends: for a loop whose caller made the first pass itself, or
// that has nothing to do at start.
func Repeat(ctx context.Context, interval time.Duration, pass func(context.Context)) {
	run(ctx, Jitter(interval), interval, pass)
}

func run(ctx context.Context, first, interval time.Duration, pass func(context.Context)) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pass(ctx)
			t.Reset(Jitter(interval))
		}
	}
}

// Jitter spreads d by ±10%, so many processes on one database do not act in lockstep.
func Jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}
