package dashboard

import (
	"net/http"
	"slices"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/workers"
)

// queuesView is the Queues page: one line per queue from the same Stats the overview
// uses (statscache), with what an operator looks at first: how much waits, how old the
// oldest due task is, what is running, stuck or dead, and how many live workers serve it
// (a queue with due tasks and none is flagged, as on the overview).
type queuesView struct {
	Queues []queueLine
}

type queueLine struct {
	Queue       string
	Total       int64
	Waiting     int64 // PENDING and ENQUEUED
	Processing  int64
	Dead        int64 // DEAD and FAILED
	Stuck       int64 // PROCESSING with an expired lease
	OldestDueAt *time.Time
	OldestAge   string // "" when nothing is due
	Workers     int    // live workers serving the queue
	Unserved    bool   // due tasks and no live worker
}

func queueLines(stats []store.QueueStats, live []store.Worker, now time.Time) []queueLine {
	served, unserved := workers.CountByQueue(live), workers.Unserved(stats, live)
	lines := make([]queueLine, 0, len(stats))
	for _, qs := range stats {
		l := queueLine{
			Queue:       qs.Queue,
			Waiting:     qs.Counts[store.StatusPending] + qs.Counts[store.StatusEnqueued],
			Processing:  qs.Counts[store.StatusProcessing],
			Dead:        qs.Counts[store.StatusDead] + qs.Counts[store.StatusFailed],
			Stuck:       qs.ExpiredLeases,
			OldestDueAt: qs.OldestDueAt,
			OldestAge:   since(now, qs.OldestDueAt),
			Workers:     served[qs.Queue],
			Unserved:    slices.Contains(unserved, qs.Queue),
		}
		for _, n := range qs.Counts {
			l.Total += n
		}
		lines = append(lines, l)
	}
	return lines
}

func (d *Dashboard) queueList(w http.ResponseWriter, r *http.Request) {
	stats, err := d.stats.get(r.Context(), isPartial(r))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	live, err := d.cfg.Workers.All(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	v := queuesView{Queues: queueLines(stats, live, d.cfg.Now().UTC())}
	d.render(w, r, http.StatusOK, "queues", pageData{Title: "Queues", Nav: "queues", Data: v})
}
