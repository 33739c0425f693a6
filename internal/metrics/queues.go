package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/store"
)

// Defaults of QueueCollectorConfig.
const (
	// DefaultStatsTTL is how long one Store.Stats result answers scrapes. Short next to a
	// scrape interval (15s-60s), long enough that many scrapers cost one query.
	DefaultStatsTTL = 5 * time.Second
	// DefaultStatsTimeout bounds the Stats query of a scrape, below Prometheus's default
	// scrape timeout (10s), so a slow database fails the gauges, not the whole scrape.
	DefaultStatsTimeout = 5 * time.Second
)

// StatsSource is the part of the store a QueueCollector reads.
type StatsSource interface {
	Stats(ctx context.Context) ([]store.QueueStats, error)
}

// QueueCollectorConfig configures a QueueCollector.
type QueueCollectorConfig struct {
	Store   StatsSource   // required
	TTL     time.Duration // how long a Stats result is reused; default DefaultStatsTTL
	Timeout time.Duration // bound of one Stats call; default DefaultStatsTimeout
	Logger  *slog.Logger  // receives failed queries; default slog.Default()
	Now     func() time.Time
}

// QueueCollector exports the store's per-queue gauges (rota_queue_*), computed from
// Store.Stats when scraped. Concurrent scrapes share one query, and a result (or a
// failure) is reused for TTL.
type QueueCollector struct {
	cfg QueueCollectorConfig

	tasks, oldestDueAge, expiredLeases, up *prometheus.Desc

	mu      sync.Mutex // held across the query: concurrent scrapes wait for its result
	at      time.Time  // when stats/err were read; zero before the first query
	stats   []store.QueueStats
	err     error
	started bool
}

var _ prometheus.Collector = (*QueueCollector)(nil)

// NewQueueCollector returns a collector for cfg.Store; register it with a registry.
func NewQueueCollector(cfg QueueCollectorConfig) *QueueCollector {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultStatsTTL
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultStatsTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &QueueCollector{
		cfg: cfg,
		tasks: prometheus.NewDesc("rota_queue_tasks",
			"Tasks in the store by queue and status.", []string{"queue", "status"}, nil),
		oldestDueAge: prometheus.NewDesc("rota_queue_oldest_due_age_seconds",
			"Age of the oldest due PENDING task of the queue (0 when none is due).", []string{"queue"}, nil),
		expiredLeases: prometheus.NewDesc("rota_queue_expired_leases",
			"PROCESSING tasks of the queue whose lease has expired (their worker is gone or stuck).", []string{"queue"}, nil),
		up: prometheus.NewDesc("rota_queue_stats_up",
			"1 when the last store query for the rota_queue_* gauges succeeded, 0 when it failed.", nil, nil),
	}
}

func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.tasks
	ch <- c.oldestDueAge
	ch <- c.expiredLeases
	ch <- c.up
}

func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	stats, err := c.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	now := c.cfg.Now()
	for _, q := range stats {
		for _, s := range store.AllStatuses {
			ch <- prometheus.MustNewConstMetric(c.tasks, prometheus.GaugeValue, float64(q.Counts[s]), q.Queue, string(s))
		}
		age := 0.0
		if q.OldestDueAt != nil {
			age = max(now.Sub(*q.OldestDueAt).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(c.oldestDueAge, prometheus.GaugeValue, age, q.Queue)
		ch <- prometheus.MustNewConstMetric(c.expiredLeases, prometheus.GaugeValue, float64(q.ExpiredLeases), q.Queue)
	}
}

// read returns the cached Stats result, querying the store when it is older than TTL.
func (c *QueueCollector) read() ([]store.QueueStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if c.started && now.Sub(c.at) < c.cfg.TTL {
		return c.stats, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	c.stats, c.err = c.cfg.Store.Stats(ctx)
	c.at, c.started = c.cfg.Now(), true
	if c.err != nil {
		c.cfg.Logger.Warn("metrics: queue stats query failed; rota_queue_* gauges are missing", "error", c.err)
	}
	return c.stats, c.err
}
