package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

// Bucket bounds, in seconds. Handlers run from microseconds (noop) to many minutes (the
// default attempt timeout is 15m); claims and commits are single statements, but a
// Source fetch includes an SQS long poll of up to 20s.
var (
	handlerBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900}
	claimBuckets   = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20}
	commitBuckets  = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
)

// Metrics holds a process's task counters and latency histograms. It is the worker's
// runtime.Observer; servers use CountEnqueued and Reaped. Safe for concurrent use.
type Metrics struct {
	queues, kinds *labelValues

	enqueued  *prometheus.CounterVec
	claimed   *prometheus.CounterVec
	succeeded *prometheus.CounterVec
	retried   *prometheus.CounterVec
	dead      *prometheus.CounterVec
	failed    *prometheus.CounterVec
	canceled  *prometheus.CounterVec

	handlerDuration *prometheus.HistogramVec
	claimDuration   *prometheus.HistogramVec
	claimErrors     *prometheus.CounterVec
	commitDuration  prometheus.Histogram
	commitErrors    prometheus.Counter
	leaseLost       prometheus.Counter
	reaps           prometheus.Counter

	abandoned        *prometheus.CounterVec
	abandonedRunning prometheus.Gauge

	heldBack *prometheus.CounterVec
}

var _ runtime.Observer = (*Metrics)(nil)

// New registers the task metrics with reg. Calling it twice with one registry shares the
// collectors (the label limits are per Metrics).
func New(reg prometheus.Registerer) *Metrics {
	taskCounter := func(name, help string) *prometheus.CounterVec {
		return Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"queue", "kind"}))
	}
	return &Metrics{
		queues: newLabelValues(MaxLabelValues),
		kinds:  newLabelValues(MaxLabelValues),

		enqueued:  taskCounter("rota_tasks_enqueued_total", "Tasks created by this process (API creates, schedule runs and triggers); idempotent hits are not counted."),
		claimed:   taskCounter("rota_tasks_claimed_total", "Task attempts started by this worker."),
		succeeded: taskCounter("rota_tasks_succeeded_total", "Task attempts recorded as SUCCEEDED."),
		retried:   taskCounter("rota_tasks_retried_total", "Task attempts that failed and were sent back for a retry."),
		dead:      taskCounter("rota_tasks_dead_total", "Task attempts that failed with no attempts left (task DEAD)."),
		failed:    taskCounter("rota_tasks_failed_total", "Task attempts that failed with a permanent error (task FAILED)."),
		canceled:  taskCounter("rota_tasks_canceled_total", "Running tasks recorded as CANCELED after a cancel request."),

		handlerDuration: Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rota_handler_duration_seconds",
			Help:    "How long task handlers ran.",
			Buckets: handlerBuckets,
		}, []string{"queue", "kind"})),
		claimDuration: Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rota_claim_duration_seconds",
			Help:    "Latency of one claim (poll mode) or one Source fetch, including its long poll (SQS mode).",
			Buckets: claimBuckets,
		}, []string{"queue"})),
		claimErrors: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_claim_errors_total",
			Help: "Claims or Source fetches that failed.",
		}, []string{"queue"})),
		commitDuration: Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rota_commit_duration_seconds",
			Help:    "Latency of one batched outcome write.",
			Buckets: commitBuckets,
		})),
		commitErrors: Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rota_commit_errors_total",
			Help: "Batched outcome writes that failed (they are retried).",
		})),
		leaseLost: Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rota_lease_lost_total",
			Help: "Task attempts whose lease another worker took over; their outcome was dropped.",
		})),
		reaps: Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rota_lease_reaps_total",
			Help: "Tasks with an expired lease that a reaper returned to the queue or ended.",
		})),
		abandoned: taskCounter("rota_handlers_abandoned_total",
			"Handlers still running AbandonGrace after their context ended (timeout, cancel, lost lease, shutdown): the worker gave their attempt up and freed the slot."),
		abandonedRunning: Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_handlers_abandoned_running",
			Help: "Abandoned handlers that have not returned yet: goroutines the worker cannot stop.",
		})),
		heldBack: HeldBack(reg),
	}
}

// HeldBack registers rota_claims_held_back_total{queue,limit} with reg (shared by the
// worker's Metrics and SQS mode's, whose claims by id are held back too).
func HeldBack(reg prometheus.Registerer) *prometheus.CounterVec {
	return Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rota_claims_held_back_total",
		Help: "Claims that came back short because of a queue setting, by the setting (limit: paused, concurrency, rate, group_concurrency, group_rate).",
	}, []string{"queue", "limit"}))
}

// labels returns t's queue and kind label values, within the label limits.
func (m *Metrics) labels(t *store.Task) (queue, kind string) {
	return m.queues.get(t.Queue), m.kinds.get(t.Kind)
}

// Enqueued counts one task created by this process.
func (m *Metrics) Enqueued(t *store.Task) {
	m.enqueued.WithLabelValues(m.labels(t)).Inc()
}

// Reaped counts n tasks reaped; it fits maintenance.ReaperConfig.OnReap.
func (m *Metrics) Reaped(n int) {
	m.reaps.Add(float64(n))
}

// The runtime.Observer methods.

func (m *Metrics) ClaimDone(queue string, _ int, took time.Duration, err error) {
	q := m.queues.get(queue)
	if err != nil {
		m.claimErrors.WithLabelValues(q).Inc()
		return
	}
	m.claimDuration.WithLabelValues(q).Observe(took.Seconds())
}

// ClaimHeldBack counts a claim held back by a queue setting (worker claims, SQS claims
// by id, HTTP-protocol claims).
func (m *Metrics) ClaimHeldBack(queue string, limit store.HoldBack) {
	m.heldBack.WithLabelValues(m.queues.get(queue), string(limit)).Inc()
}

func (m *Metrics) TaskClaimed(t *store.Task) {
	m.claimed.WithLabelValues(m.labels(t)).Inc()
}

func (m *Metrics) HandlerDone(t *store.Task, took time.Duration, _ error) {
	m.handlerDuration.WithLabelValues(m.labels(t)).Observe(took.Seconds())
}

func (m *Metrics) CommitDone(_ int, took time.Duration, err error) {
	// ErrLeaseLost for the whole call is an answer, not a failed write.
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		m.commitErrors.Inc()
		return
	}
	m.commitDuration.Observe(took.Seconds())
}

func (m *Metrics) OutcomeRecorded(t *store.Task, status store.Status) {
	var c *prometheus.CounterVec
	switch status {
	case store.StatusSucceeded:
		c = m.succeeded
	case store.StatusPending, store.StatusEnqueued:
		c = m.retried
	case store.StatusDead:
		c = m.dead
	case store.StatusFailed:
		c = m.failed
	case store.StatusCanceled:
		c = m.canceled
	default:
		return // the runtime logs an unexpected status
	}
	c.WithLabelValues(m.labels(t)).Inc()
}

func (m *Metrics) LeaseLost(*store.Task) {
	m.leaseLost.Inc()
}

func (m *Metrics) HandlerAbandoned(t *store.Task) {
	m.abandoned.WithLabelValues(m.labels(t)).Inc()
	m.abandonedRunning.Inc()
}

func (m *Metrics) AbandonedHandlerReturned(*store.Task, time.Duration) {
	m.abandonedRunning.Dec()
}
