// Package schedule runs the schedule claim loop: every server calls ClaimDueSchedules
// every Interval, and again at once while batches come back full. The store arbitrates
// (FOR UPDATE SKIP LOCKED, run idempotency keys), so the loop is safe to run in every
// process at once: no leader, and no clock but the database's.
package schedule

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/rotaqueue/rota/internal/loop"
	"github.com/rotaqueue/rota/internal/store"
)

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultBatch    = 100
)

// Config configures a Scheduler.
type Config struct {
	Store store.ScheduleStore // required
	// Interval between passes when nothing is left to claim. Default DefaultInterval.
	Interval time.Duration
	// Batch is the most schedules one ClaimDueSchedules call claims; a pass claims again
	// at once while calls come back full. Default DefaultBatch (at most MaxListLimit).
	Batch  int
	Logger *slog.Logger // default slog.Default()
	// OnClaim, when set, is called after every ClaimDueSchedules call (the metrics
	// exporter's hook: latency histogram, counters).
	OnClaim func(ClaimEvent)
}

// ClaimEvent describes one ClaimDueSchedules call.
type ClaimEvent struct {
	Latency   time.Duration
	Schedules int // schedules claimed
	Runs      int // runs enqueued (tasks, and flows of kind flow schedules)
	Skipped   int // ticks skipped by catch-up or overlap policies
	Err       error
}

// Stats are the scheduler's counters since it was created.
type Stats struct {
	Claims           uint64        // successful ClaimDueSchedules calls
	ClaimErrors      uint64        // failed calls
	SchedulesClaimed uint64        // schedules claimed, summed over calls
	RunsEnqueued     uint64        // runs (tasks) enqueued
	TicksSkipped     uint64        // ticks skipped by catch-up or overlap policies
	ClaimLatency     time.Duration // total time spent in successful calls
	LastClaimLatency time.Duration
	MaxClaimLatency  time.Duration
}

// Scheduler claims due schedules every Interval.
type Scheduler struct {
	cfg Config

	claims, claimErrors, schedules, runs, skipped atomic.Uint64
	latency, lastLatency, maxLatency              atomic.Int64
}

// NewScheduler returns a scheduler; call Run to start it.
func NewScheduler(cfg Config) *Scheduler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	cfg.Batch = min(cfg.Batch, store.MaxListLimit)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Scheduler{cfg: cfg}
}

// Run claims until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	loop.Every(ctx, s.cfg.Interval, func(ctx context.Context) { s.Pass(ctx) })
}

// Pass claims every schedule due now, batch after batch until one comes back short,
// and returns how many runs it enqueued.
func (s *Scheduler) Pass(ctx context.Context) int {
	var schedules, runs, skipped int
	for ctx.Err() == nil {
		start := time.Now()
		claims, err := s.cfg.Store.ClaimDueSchedules(ctx, store.ClaimSchedulesParams{Limit: s.cfg.Batch})
		ev := ClaimEvent{Latency: time.Since(start), Schedules: len(claims), Err: err}
		if err != nil {
			s.claimErrors.Add(1)
			if ctx.Err() == nil {
				s.cfg.Logger.Warn("claim due schedules failed", "error", err)
				s.observe(ev)
			}
			break
		}
		for _, c := range claims {
			ev.Runs += len(c.Runs) + len(c.Flows) // a flow schedule's run is a flow
			ev.Skipped += c.SkippedTicks
			if c.SkippedTicks > 0 {
				s.cfg.Logger.Info("schedule ticks got no run (catch-up or overlap policy)",
					"schedule", c.Name, "skipped", c.SkippedTicks, "runs", len(c.Runs), "next_run_at", c.NextRunAt)
			}
		}
		s.record(ev)
		s.observe(ev)
		schedules, runs, skipped = schedules+ev.Schedules, runs+ev.Runs, skipped+ev.Skipped
		if len(claims) < s.cfg.Batch {
			break
		}
	}
	if runs > 0 || skipped > 0 {
		s.cfg.Logger.Info("schedules claimed", "schedules", schedules, "runs", runs, "skipped", skipped)
	}
	return runs
}

func (s *Scheduler) record(ev ClaimEvent) {
	s.claims.Add(1)
	s.schedules.Add(uint64(ev.Schedules))
	s.runs.Add(uint64(ev.Runs))
	s.skipped.Add(uint64(ev.Skipped))
	s.latency.Add(int64(ev.Latency))
	s.lastLatency.Store(int64(ev.Latency))
	for {
		cur := s.maxLatency.Load()
		if int64(ev.Latency) <= cur || s.maxLatency.CompareAndSwap(cur, int64(ev.Latency)) {
			break
		}
	}
}

func (s *Scheduler) observe(ev ClaimEvent) {
	if s.cfg.OnClaim != nil {
		s.cfg.OnClaim(ev)
	}
}

// Stats returns the counters so far.
func (s *Scheduler) Stats() Stats {
	return Stats{
		Claims:           s.claims.Load(),
		ClaimErrors:      s.claimErrors.Load(),
		SchedulesClaimed: s.schedules.Load(),
		RunsEnqueued:     s.runs.Load(),
		TicksSkipped:     s.skipped.Load(),
		ClaimLatency:     time.Duration(s.latency.Load()),
		LastClaimLatency: time.Duration(s.lastLatency.Load()),
		MaxClaimLatency:  time.Duration(s.maxLatency.Load()),
	}
}
