package sqsmode

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/store"
)

// Reasons a received message is deleted (the reason label of
// rota_sqs_messages_deleted_total).
const (
	ReasonSettled   = "settled"   // its task's outcome is committed
	ReasonDuplicate = "duplicate" // its task is finished, owned by another worker, or gone
	ReasonPoison    = "poison"    // its body is not a task id
	ReasonMisrouted = "misrouted" // its task belongs to another Rota queue
)

// Metrics counts what SQS mode does, for Prometheus and (through Stats) for tests.
// One Metrics may be shared by an enqueuer, sources and DLQ publishers.
type Metrics struct {
	sent           *prometheus.CounterVec
	sendFailures   *prometheus.CounterVec
	received       *prometheus.CounterVec
	deleted        *prometheus.CounterVec
	poison         *prometheus.CounterVec
	deferred       *prometheus.CounterVec
	deleteFailures *prometheus.CounterVec
	dlqPublished   prometheus.Counter
	dlqFailures    prometheus.Counter
	queueLosses    *prometheus.CounterVec
	returned       *prometheus.CounterVec
	heldBack       *prometheus.CounterVec

	stats struct {
		sent, sendFailures, received, poison, deferred, deleteFailures    atomic.Int64
		deletedSettled, deletedDuplicate, deletedPoison, deletedMisrouted atomic.Int64
		dlqPublished, dlqFailures                                         atomic.Int64
		queueLosses, returned, heldBack                                   atomic.Int64
	}
}

// Stats is a snapshot of one Metrics' counters, summed over queues.
type Stats struct {
	Sent             int64 // task ids sent by the enqueuer
	SendFailures     int64 // ids whose send failed (their tasks stay eligible)
	Received         int64 // messages received by sources
	DeletedSettled   int64
	DeletedDuplicate int64
	DeletedPoison    int64
	DeletedMisrouted int64
	Poison           int64 // bodies that were not task ids
	Deferred         int64 // messages hidden until their task is due, or looked at again later
	DeleteFailures   int64 // deletes SQS refused or that failed (the message comes back)
	DLQPublished     int64
	DLQFailures      int64
	QueueLosses      int64 // SQS queues found to have lost their messages (losswatch.go)
	Returned         int64 // messages an idle queue's poll received with no slot free, made visible again
	HeldBack         int64 // claims by id a queue setting (pause, a limit) held back
}

// NewMetrics registers the SQS metrics with reg (nil: a private registry, as tests
// want). Registering twice with one registry shares the same collectors.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return metrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
	}
	return &Metrics{
		sent:         counterVec("rota_sqs_messages_sent_total", "Task ids sent to SQS by the enqueuer, by Rota queue.", "queue"),
		sendFailures: counterVec("rota_sqs_send_failures_total", "Task ids the enqueuer failed to send (their tasks stay eligible), by Rota queue.", "queue"),
		received:     counterVec("rota_sqs_messages_received_total", "Messages received by SQS workers, by Rota queue.", "queue"),
		deleted:      counterVec("rota_sqs_messages_deleted_total", "Messages deleted by SQS workers, by Rota queue and reason (settled, duplicate, poison, misrouted).", "queue", "reason"),
		poison:       counterVec("rota_sqs_poison_messages_total", "Received messages whose body is not a task id, by Rota queue.", "queue"),
		deferred:     counterVec("rota_sqs_messages_deferred_total", "Received messages hidden again because their task is not claimable yet, by Rota queue.", "queue"),
		queueLosses: counterVec("rota_sqs_queue_losses_total", "Times an SQS queue was found to have lost its messages "+
			"(reason: recreated, missing, counts), after which its ENQUEUED tasks are sent again, by Rota queue.", "queue", "reason"),
		returned: counterVec("rota_sqs_messages_returned_total", "Messages an idle queue's long poll received while the worker "+
			"had no free slot, made visible again at once, by Rota queue.", "queue"),
		deleteFailures: counterVec("rota_sqs_delete_failures_total", "Message deletes that failed (the message comes back; the database decides), by Rota queue.", "queue"),
		heldBack:       metrics.HeldBack(reg),
		dlqPublished: metrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rota_dlq_published_total", Help: "Dead-task events published to the SQS dead-letter queue.",
		})),
		dlqFailures: metrics.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rota_dlq_publish_failures_total", Help: "Dead-task event publishes that failed (the events wait in the database for the next round).",
		})),
	}
}

// Stats returns a snapshot of the counters.
func (m *Metrics) Stats() Stats {
	s := &m.stats
	return Stats{
		Sent: s.sent.Load(), SendFailures: s.sendFailures.Load(), Received: s.received.Load(),
		DeletedSettled: s.deletedSettled.Load(), DeletedDuplicate: s.deletedDuplicate.Load(),
		DeletedPoison: s.deletedPoison.Load(), DeletedMisrouted: s.deletedMisrouted.Load(),
		Poison: s.poison.Load(), Deferred: s.deferred.Load(), DeleteFailures: s.deleteFailures.Load(),
		DLQPublished: s.dlqPublished.Load(), DLQFailures: s.dlqFailures.Load(), QueueLosses: s.queueLosses.Load(),
		Returned: s.returned.Load(), HeldBack: s.heldBack.Load(),
	}
}

func (m *Metrics) addSent(queue string, n int) {
	m.sent.WithLabelValues(queue).Add(float64(n))
	m.stats.sent.Add(int64(n))
}

func (m *Metrics) addSendFailures(queue string, n int) {
	m.sendFailures.WithLabelValues(queue).Add(float64(n))
	m.stats.sendFailures.Add(int64(n))
}

func (m *Metrics) addReceived(queue string, n int) {
	m.received.WithLabelValues(queue).Add(float64(n))
	m.stats.received.Add(int64(n))
}

func (m *Metrics) addPoison(queue string) {
	m.poison.WithLabelValues(queue).Inc()
	m.stats.poison.Add(1)
}

func (m *Metrics) addDeferred(queue string, n int) {
	m.deferred.WithLabelValues(queue).Add(float64(n))
	m.stats.deferred.Add(int64(n))
}

func (m *Metrics) addDeleted(queue, reason string, n int) {
	m.deleted.WithLabelValues(queue, reason).Add(float64(n))
	switch reason {
	case ReasonSettled:
		m.stats.deletedSettled.Add(int64(n))
	case ReasonDuplicate:
		m.stats.deletedDuplicate.Add(int64(n))
	case ReasonPoison:
		m.stats.deletedPoison.Add(int64(n))
	case ReasonMisrouted:
		m.stats.deletedMisrouted.Add(int64(n))
	}
}

func (m *Metrics) addDeleteFailures(queue string, n int) {
	m.deleteFailures.WithLabelValues(queue).Add(float64(n))
	m.stats.deleteFailures.Add(int64(n))
}

func (m *Metrics) addDLQPublished(n int) {
	m.dlqPublished.Add(float64(n))
	m.stats.dlqPublished.Add(int64(n))
}

func (m *Metrics) addDLQFailures(n int) {
	m.dlqFailures.Add(float64(n))
	m.stats.dlqFailures.Add(int64(n))
}

func (m *Metrics) addQueueLoss(queue, reason string) {
	m.queueLosses.WithLabelValues(queue, reason).Inc()
	m.stats.queueLosses.Add(1)
}

func (m *Metrics) addHeldBack(queue string, limit store.HoldBack) {
	m.heldBack.WithLabelValues(queue, string(limit)).Inc()
	m.stats.heldBack.Add(1)
}

func (m *Metrics) addReturned(queue string, n int) {
	m.returned.WithLabelValues(queue).Add(float64(n))
	m.stats.returned.Add(int64(n))
}
