package dashboard

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/workers"
)

// stuckListLimit bounds the stuck tasks the overview lists (the per-queue counts are
// complete).
const stuckListLimit = 20

type overviewView struct {
	Queues      []queueRow
	Total       queueRow
	Chart       chart
	Succeeded   int64 // in the last hour
	Failed      int64
	FailureRate string // "2.5%", or "—" when nothing finished
	Stuck       []*store.Task
	// Unserved are the queues with due tasks and no live worker (DESIGN.md section 12):
	// nothing will run their tasks until a worker comes.
	Unserved []string
}

type queueRow struct {
	Queue         string
	Counts        []statusCount // in store.AllStatuses order
	OldestPending string        // age of the oldest due PENDING task, "" when none
	OldestDueAt   *time.Time
	Stuck         int64
	Workers       int  // live workers serving the queue
	Unserved      bool // due tasks and no live worker
	// Paused and Limits are the queue's flow-control settings (DESIGN.md section 11).
	Paused bool
	Limits []string
}

type statusCount struct {
	Status store.Status
	Count  int64
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := d.cfg.Now().UTC()
	stats, err := d.stats.get(ctx, isPartial(r))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	buckets, err := d.throughput.lastHour(ctx, now)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	stuck, err := d.cfg.Store.StuckTasks(ctx, stuckListLimit)
	if err != nil {
		d.fail(w, r, err)
		return
	}

	live, err := d.cfg.Workers.All(ctx)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	served := workers.CountByQueue(live)
	settings, err := d.queueSettings(ctx)
	if err != nil {
		d.fail(w, r, err)
		return
	}

	v := overviewView{Stuck: stuck, Chart: newChart(buckets, now), Unserved: workers.Unserved(stats, live)}
	totals := map[store.Status]int64{}
	for _, qs := range stats {
		row := queueRow{Queue: qs.Queue, Stuck: qs.ExpiredLeases, OldestDueAt: qs.OldestDueAt,
			Workers: served[qs.Queue], Unserved: slices.Contains(v.Unserved, qs.Queue)}
		if s := settings[qs.Queue]; s != nil {
			row.Paused, row.Limits = s.Paused, limitTexts(s)
		}
		for _, st := range store.AllStatuses {
			row.Counts = append(row.Counts, statusCount{st, qs.Counts[st]})
			totals[st] += qs.Counts[st]
		}
		row.OldestPending = since(now, qs.OldestDueAt)
		v.Total.Stuck += qs.ExpiredLeases
		v.Queues = append(v.Queues, row)
	}
	for _, st := range store.AllStatuses {
		v.Total.Counts = append(v.Total.Counts, statusCount{st, totals[st]})
	}
	for _, b := range buckets {
		v.Succeeded += b.Succeeded
		v.Failed += b.Failed
	}
	v.FailureRate = failureRate(v.Succeeded, v.Failed)
	d.render(w, r, http.StatusOK, "overview", pageData{Title: "Overview", Nav: "overview", Data: v})
}

// failureRate is failed / (succeeded + failed) as a percentage with one decimal.
func failureRate(succeeded, failed int64) string {
	if succeeded+failed == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(failed)/float64(succeeded+failed))
}
