package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/workers"
)

// queuesView is the Queues page: one line per queue from the same Stats the overview
// uses (statscache), with what an operator looks at first: how much waits, how old the
// oldest due task is, what is running, stuck or dead, and how many live workers serve it
// (a queue with due tasks and none is flagged, as on the overview); and each queue's
// flow-control settings (DESIGN.md section 11), read fresh, with pause and resume
// buttons and a form to set the limits. Configured queues without tasks are listed too.
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
	Paused      bool
	Limits      []string // "concurrency 5", "rate 100/1s", ...; none when unlimited
}

func queueLines(stats []store.QueueStats, live []store.Worker, settings map[string]*store.QueueSettings, now time.Time) []queueLine {
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
	// A configured queue needs no task: it is listed with zero counts.
	for name := range settings {
		if !slices.ContainsFunc(lines, func(l queueLine) bool { return l.Queue == name }) {
			lines = append(lines, queueLine{Queue: name, Workers: served[name]})
		}
	}
	for i := range lines {
		if s := settings[lines[i].Queue]; s != nil {
			lines[i].Paused, lines[i].Limits = s.Paused, limitTexts(s)
		}
	}
	slices.SortFunc(lines, func(a, b queueLine) int { return strings.Compare(a.Queue, b.Queue) })
	return lines
}

// limitTexts names each limit a queue has, as the CLI's flags take them.
func limitTexts(s *store.QueueSettings) []string {
	var out []string
	if s.Concurrency != nil {
		out = append(out, "concurrency "+store.FormatCount(s.Concurrency))
	}
	if s.Rate != nil {
		out = append(out, "rate "+store.FormatRate(s.Rate))
	}
	if s.GroupConcurrency != nil {
		out = append(out, "group concurrency "+store.FormatCount(s.GroupConcurrency))
	}
	if s.GroupRate != nil {
		out = append(out, "group rate "+store.FormatRate(s.GroupRate))
	}
	return out
}

// queueSettings reads every configured queue's settings, by name.
func (d *Dashboard) queueSettings(ctx context.Context) (map[string]*store.QueueSettings, error) {
	list, err := d.cfg.Store.ListQueueSettings(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*store.QueueSettings, len(list))
	for _, s := range list {
		out[s.Queue] = s
	}
	return out, nil
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
	settings, err := d.queueSettings(r.Context())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	v := queuesView{Queues: queueLines(stats, live, settings, d.cfg.Now().UTC())}
	d.render(w, r, http.StatusOK, "queues", pageData{Title: "Queues", Nav: "queues", Data: v})
}

func (d *Dashboard) pauseQueue(w http.ResponseWriter, r *http.Request) {
	d.queueAction(w, r, r.PathValue("queue"), func(ctx context.Context, queue string) (string, error) {
		paused := true
		if _, err := d.cfg.Store.UpdateQueueSettings(ctx, queue, store.QueuePatch{Paused: &paused}); err != nil {
			return "", err
		}
		return fmt.Sprintf("Queue %s paused: no task of it starts until it is resumed (running ones finish).", queue), nil
	})
}

func (d *Dashboard) resumeQueue(w http.ResponseWriter, r *http.Request) {
	d.queueAction(w, r, r.PathValue("queue"), func(ctx context.Context, queue string) (string, error) {
		paused := false
		if _, err := d.cfg.Store.UpdateQueueSettings(ctx, queue, store.QueuePatch{Paused: &paused}); err != nil {
			return "", err
		}
		return fmt.Sprintf("Queue %s resumed.", queue), nil
	})
}

// setQueueLimits applies the limits form: each field given (N, N/Ss, or none) changes
// that limit, an empty one keeps it, so that the form needs no current values.
func (d *Dashboard) setQueueLimits(w http.ResponseWriter, r *http.Request) {
	d.queueAction(w, r, strings.TrimSpace(r.PostForm.Get("queue")), func(ctx context.Context, queue string) (string, error) {
		p, err := limitsPatch(r)
		if err != nil {
			return "", err
		}
		s, err := d.cfg.Store.UpdateQueueSettings(ctx, queue, p)
		if err != nil {
			return "", err
		}
		limits := strings.Join(limitTexts(s), ", ")
		if limits == "" {
			limits = "no limits"
		}
		return fmt.Sprintf("Queue %s: %s.", queue, limits), nil
	})
}

func limitsPatch(r *http.Request) (store.QueuePatch, error) {
	var p store.QueuePatch
	var err error
	field := func(name string) string { return strings.TrimSpace(r.PostForm.Get(name)) }
	if v := field("concurrency"); v != "" && err == nil {
		p.Concurrency, err = store.ParseCountChange("concurrency", v)
	}
	if v := field("rate"); v != "" && err == nil {
		p.Rate, err = store.ParseRateChange("rate", v)
	}
	if v := field("group_concurrency"); v != "" && err == nil {
		p.GroupConcurrency, err = store.ParseCountChange("group concurrency", v)
	}
	if v := field("group_rate"); v != "" && err == nil {
		p.GroupRate, err = store.ParseRateChange("group rate", v)
	}
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return p, badRequest("%s", strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
	}
	if p == (store.QueuePatch{}) {
		return p, badRequest("Enter at least one limit: a number (or N/Ss for a rate), or none to remove it.")
	}
	return p, nil
}

// queueAction runs op on a queue and goes back to the Queues page with its outcome. A
// bad name or value is a 400 page; nothing is changed then.
func (d *Dashboard) queueAction(w http.ResponseWriter, r *http.Request, queue string, op func(ctx context.Context, queue string) (string, error)) {
	if err := store.ValidateName("queue", queue); err != nil {
		d.fail(w, r, badRequest("%s", strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": ")))
		return
	}
	msg, err := op(r.Context(), queue)
	if err != nil {
		var ue *userError
		if !errors.As(err, &ue) && errors.Is(err, store.ErrInvalid) {
			err = badRequest("%s", strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
		}
		d.fail(w, r, err)
		return
	}
	d.redirectBack(w, r, "/queues", flashOK, msg)
}
