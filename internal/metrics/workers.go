package metrics

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/workers"
)

// LiveWorkers is the part of workers.Cache a WorkerCollector reads.
type LiveWorkers interface {
	All(ctx context.Context) ([]store.Worker, error)
}

// WorkerCollectorConfig configures a WorkerCollector.
type WorkerCollectorConfig struct {
	Workers LiveWorkers  // required: a workers.Cache (a short-lived cache of the registry)
	Stats   StatsSource  // required for rota_queue_unserved: a statscache.Cache
	Logger  *slog.Logger // default slog.Default()
}

// WorkerCollector exports the workers registry's gauges when scraped (DESIGN.md
// section 12): rota_workers, the live workers of each queue, and rota_queue_unserved, 1
// for a queue with due tasks and no live worker. Both read cached answers, so a scrape
// costs at most one indexed registry query and shares the Stats query of the queue
// gauges.
type WorkerCollector struct {
	cfg                   WorkerCollectorConfig
	workers, unserved, up *prometheus.Desc
}

var _ prometheus.Collector = (*WorkerCollector)(nil)

// NewWorkerCollector returns a collector for cfg; register it with a registry.
func NewWorkerCollector(cfg WorkerCollectorConfig) *WorkerCollector {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &WorkerCollector{
		cfg: cfg,
		workers: prometheus.NewDesc("rota_workers",
			"Live workers (seen within 30 s) serving the queue, of every kind and mode.", []string{"queue"}, nil),
		unserved: prometheus.NewDesc("rota_queue_unserved",
			"1 when the queue has due tasks and no live worker (its tasks wait until one comes), else 0.", []string{"queue"}, nil),
		up: prometheus.NewDesc("rota_workers_up",
			"1 when the last registry query for rota_workers succeeded, 0 when it failed.", nil, nil),
	}
}

func (c *WorkerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.workers
	ch <- c.unserved
	ch <- c.up
}

func (c *WorkerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultStatsTimeout)
	defer cancel()
	ws, err := c.cfg.Workers.All(ctx)
	if err != nil {
		c.cfg.Logger.Warn("metrics: workers registry query failed; rota_workers gauges are missing", "error", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	counts := workers.CountByQueue(ws)
	for q, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, float64(n), q)
	}
	if c.cfg.Stats == nil {
		return
	}
	stats, err := c.cfg.Stats.Stats(ctx)
	if err != nil {
		return // the queue collector reports it (rota_queue_stats_up)
	}
	unserved := map[string]bool{}
	for _, q := range workers.Unserved(stats, ws) {
		unserved[q] = true
	}
	for _, q := range stats {
		if counts[q.Queue] == 0 { // a queue with tasks but no worker: rota_workers 0
			ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, 0, q.Queue)
		}
		v := 0.0
		if unserved[q.Queue] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.unserved, prometheus.GaugeValue, v, q.Queue)
	}
}
