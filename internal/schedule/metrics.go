package schedule

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/metrics"
)

// Metrics exports the scheduler's claims to Prometheus. Pass its Observe method as
// Config.OnClaim.
type Metrics struct {
	claims  *prometheus.CounterVec
	runs    prometheus.Counter
	skipped prometheus.Counter
	latency prometheus.Histogram
}

// NewMetrics registers the schedule metrics with reg. Registering twice with one
// registry (two schedulers in one process) shares the same collectors.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		claims: metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_schedule_claims_total",
			Help: "ClaimDueSchedules calls, by result (ok or error).",
		}, []string{"result"})),
		runs: metrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rota_schedule_runs_enqueued_total",
			Help: "Tasks enqueued by schedule claims (one per tick run).",
		})),
		skipped: metrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rota_schedule_ticks_skipped_total",
			Help: "Ticks that got no run: missed ticks a catch-up policy (skip or one) did not run, and ticks an overlap policy (skip, buffer_one, cancel_other) skipped.",
		})),
		latency: metrics.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rota_schedule_claim_duration_seconds",
			Help:    "Latency of ClaimDueSchedules calls.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		})),
	}
}

// Observe records one claim.
func (m *Metrics) Observe(ev ClaimEvent) {
	if ev.Err != nil {
		m.claims.WithLabelValues("error").Inc()
		return
	}
	m.claims.WithLabelValues("ok").Inc()
	m.runs.Add(float64(ev.Runs))
	m.skipped.Add(float64(ev.Skipped))
	m.latency.Observe(ev.Latency.Seconds())
}
