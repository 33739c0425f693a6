package metrics

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotaqueue/rota/internal/store"
)

// DefaultTopGroups is how many groups of a queue get a rota_group_running series of
// their own; the others are summed under group="_other".
const DefaultTopGroups = 10

// FlowSource is the part of the store a FlowCollector reads.
type FlowSource interface {
	ListQueueSettings(ctx context.Context) ([]*store.QueueSettings, error)
	RunningByGroup(ctx context.Context, queues []string) ([]store.GroupRunning, error)
}

// FlowCollectorConfig configures a FlowCollector.
type FlowCollectorConfig struct {
	Store     FlowSource   // required
	TopGroups int          // groups with a series of their own per queue; default DefaultTopGroups
	Logger    *slog.Logger // default slog.Default()
}

// FlowCollector exports the flow-control gauges (DESIGN.md section 11) when scraped:
// rota_queue_paused for every configured queue, and rota_group_running, the running
// tasks of the busiest groups of each queue with a group limit. A scrape costs one read
// of rota.queues (a row per configured queue) and, when some queue has a group limit,
// one statement over those queues' PROCESSING tasks (Store.RunningByGroup): bounded by
// what runs, never by the backlog.
//
// Cardinality: group keys are made up by whoever enqueues (a tenant id, a user id), so
// a series per key could grow without bound. Each queue exports at most TopGroups
// groups, the ones with the most running tasks, and sums the rest into one series with
// group="_other" (the package's overflow label, as for queue and kind; a group really
// named "_other" is counted there too).
type FlowCollector struct {
	cfg                 FlowCollectorConfig
	paused, running, up *prometheus.Desc
}

var _ prometheus.Collector = (*FlowCollector)(nil)

// NewFlowCollector returns a collector for cfg; register it with a registry.
func NewFlowCollector(cfg FlowCollectorConfig) *FlowCollector {
	if cfg.TopGroups <= 0 {
		cfg.TopGroups = DefaultTopGroups
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &FlowCollector{
		cfg: cfg,
		paused: prometheus.NewDesc("rota_queue_paused",
			"1 while the queue is paused (no claims take its tasks), else 0; configured queues only.", []string{"queue"}, nil),
		running: prometheus.NewDesc("rota_group_running",
			"Running (PROCESSING) tasks of a group_key of a queue with a group limit: the busiest groups each, the rest summed under group=\"_other\".",
			[]string{"queue", "group"}, nil),
		up: prometheus.NewDesc("rota_queue_settings_up",
			"1 when the last store queries for rota_queue_paused and rota_group_running succeeded, 0 when one failed.", nil, nil),
	}
}

func (c *FlowCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.paused
	ch <- c.running
	ch <- c.up
}

func (c *FlowCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultStatsTimeout)
	defer cancel()
	settings, err := c.cfg.Store.ListQueueSettings(ctx)
	if err != nil {
		c.failed(ch, "queue settings", err)
		return
	}
	var grouped []string
	for _, q := range settings {
		v := 0.0
		if q.Paused {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, v, q.Queue)
		if q.GroupConcurrency != nil || q.GroupRate != nil {
			grouped = append(grouped, q.Queue)
		}
	}
	if len(grouped) > 0 {
		counts, err := c.cfg.Store.RunningByGroup(ctx, grouped)
		if err != nil {
			c.failed(ch, "running by group", err)
			return
		}
		c.collectGroups(ch, grouped, counts)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
}

// collectGroups exports the top groups of each queue and one "_other" series (0 when
// every running group has its own), so a queue with a group limit always has a series.
func (c *FlowCollector) collectGroups(ch chan<- prometheus.Metric, queues []string, counts []store.GroupRunning) {
	byQueue := map[string][]store.GroupRunning{}
	for _, g := range counts {
		byQueue[g.Queue] = append(byQueue[g.Queue], g)
	}
	for _, q := range queues {
		var other int64
		for i, g := range byQueue[q] { // most running first (RunningByGroup's order)
			if i >= c.cfg.TopGroups || g.GroupKey == otherLabel {
				other += g.Running
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(g.Running), q, g.GroupKey)
		}
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(other), q, otherLabel)
	}
}

func (c *FlowCollector) failed(ch chan<- prometheus.Metric, what string, err error) {
	c.cfg.Logger.Warn("metrics: "+what+" query failed; flow-control gauges are missing", "error", err)
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
}
