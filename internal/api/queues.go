package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/workers"
)

// Queues as objects (DESIGN.md section 11): GET /api/queues, GET|PATCH
// /api/queues/{queue}, POST /api/queues/{queue}/pause|resume. A queue's answer joins its
// settings (rota.queues, read fresh), its counts (the shared statscache Stats), the age
// of its oldest due PENDING task (Store.NextDue, by the database's clock, where the store
// tells it) and its live workers (the shared workers cache).

type rateJSON struct {
	Limit      int `json:"limit"`
	PerSeconds int `json:"per_seconds"`
}

type queueJSON struct {
	Name             string    `json:"name"`
	Paused           bool      `json:"paused"`
	Concurrency      *int      `json:"concurrency"`
	Rate             *rateJSON `json:"rate"`
	GroupConcurrency *int      `json:"group_concurrency"`
	GroupRate        *rateJSON `json:"group_rate"`
	// Counts lists every status, zero or not, like GET /api/stats.
	Counts map[store.Status]int64 `json:"counts"`
	// OldestPendingSeconds is the age of the oldest due PENDING task, 0 when none is due.
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
	Workers              int     `json:"workers"`
	// UpdatedAt is when the settings last changed; null for a queue nobody configured.
	UpdatedAt *time.Time `json:"updated_at"`
}

type queuesJSON struct {
	Queues []queueJSON `json:"queues"`
}

func rateOut(r *store.RateLimit) *rateJSON {
	if r == nil {
		return nil
	}
	return &rateJSON{Limit: r.Limit, PerSeconds: r.PerSeconds}
}

func settingsOut(s *store.QueueSettings) queueJSON {
	return queueJSON{
		Name:             s.Queue,
		Paused:           s.Paused,
		Concurrency:      s.Concurrency,
		Rate:             rateOut(s.Rate),
		GroupConcurrency: s.GroupConcurrency,
		GroupRate:        rateOut(s.GroupRate),
		Counts:           zeroCounts(),
		UpdatedAt:        utcPtr(s.UpdatedAt),
	}
}

// queueFacts are the parts of a queue's answer that are not its settings.
type queueFacts struct {
	stats   map[string]store.QueueStats
	workers map[string]int
	nextDue map[string]time.Duration
}

// readFacts reads the counts, live workers and oldest due age of queues and, with all,
// of every queue that has tasks or live workers; names is every queue it read.
func (s *Server) readFacts(ctx context.Context, queues []string, all bool) (f queueFacts, names []string, err error) {
	f.stats = map[string]store.QueueStats{}
	stats, err := s.cfg.Stats.Stats(ctx)
	if err != nil {
		return f, nil, err
	}
	for _, q := range stats {
		f.stats[q.Queue] = q
	}
	live, err := s.cfg.Workers.All(ctx)
	if err != nil {
		return f, nil, err
	}
	f.workers = workers.CountByQueue(live)
	names = slices.Clone(queues)
	if all {
		for q := range f.stats {
			names = append(names, q)
		}
		for q := range f.workers {
			names = append(names, q)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	if f.nextDue, err = s.cfg.Store.NextDue(ctx, names); err != nil {
		return f, nil, err
	}
	return f, names, nil
}

func (f queueFacts) fill(q *queueJSON, now time.Time) {
	st, ok := f.stats[q.Name]
	if ok {
		for status, n := range st.Counts {
			q.Counts[status] += n
		}
	}
	q.Workers = f.workers[q.Name]
	// The age by the database's clock where the store tells it (PostgreSQL's NextDue is
	// negative by the task's age), so a skewed server clock does not show; else (the
	// memory store says 0 for "due", and its clock is this process's) from Stats.
	// NextDue is fresh: a queue it shows nothing due in (absent, or due later) has 0.
	switch d, pending := f.nextDue[q.Name]; {
	case pending && d < 0:
		q.OldestPendingSeconds = -d.Seconds()
	case pending && d == 0 && ok && st.OldestDueAt != nil:
		q.OldestPendingSeconds = max(now.Sub(*st.OldestDueAt).Seconds(), 0)
	}
}

// listQueues answers every queue that has tasks, settings or live workers, by name.
func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	settings, err := s.cfg.Store.ListQueueSettings(r.Context())
	if err != nil {
		return err
	}
	configured := make([]string, len(settings))
	for i, st := range settings {
		configured[i] = st.Queue
	}
	facts, names, err := s.readFacts(r.Context(), configured, true)
	if err != nil {
		return err
	}
	byName := make(map[string]queueJSON, len(names))
	for _, n := range names {
		byName[n] = settingsOut(&store.QueueSettings{Queue: n})
	}
	for _, st := range settings {
		byName[st.Queue] = settingsOut(st)
	}
	out := queuesJSON{Queues: make([]queueJSON, 0, len(byName))}
	for _, q := range byName {
		facts.fill(&q, s.cfg.Now())
		out.Queues = append(out.Queues, q)
	}
	slices.SortFunc(out.Queues, func(a, b queueJSON) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, out)
	return nil
}

// queueName reads and checks the {queue} of the path.
func queueName(r *http.Request) (string, error) {
	q := r.PathValue("queue")
	return q, store.ValidateName("queue", q)
}

// answerQueue writes one queue's answer from its settings.
func (s *Server) answerQueue(w http.ResponseWriter, r *http.Request, settings *store.QueueSettings) error {
	facts, _, err := s.readFacts(r.Context(), []string{settings.Queue}, false)
	if err != nil {
		return err
	}
	out := settingsOut(settings)
	facts.fill(&out, s.cfg.Now())
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getQueue answers one queue; one with no tasks and no settings has the defaults.
func (s *Server) getQueue(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	q, err := queueName(r)
	if err != nil {
		return err
	}
	settings, err := s.cfg.Store.GetQueueSettings(r.Context(), q)
	if err != nil {
		return err
	}
	return s.answerQueue(w, r, settings)
}

// patchQueue applies a JSON merge patch of the settings: a field present sets it, null
// removes the limit, an absent field keeps its value.
func (s *Server) patchQueue(w http.ResponseWriter, r *http.Request) error {
	q, err := queueName(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if err != nil {
		return err
	}
	patch, err := decodeQueuePatch(body)
	if err != nil {
		return err
	}
	return s.updateQueue(w, r, q, patch)
}

func (s *Server) pauseQueue(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, true)
}

func (s *Server) resumeQueue(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, false)
}

// setPaused answers pause and resume; they take no body (one sent anyway is ignored,
// as cancel's is).
func (s *Server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) error {
	q, err := queueName(r)
	if err != nil {
		return err
	}
	return s.updateQueue(w, r, q, store.QueuePatch{Paused: &paused})
}

func (s *Server) updateQueue(w http.ResponseWriter, r *http.Request, queue string, patch store.QueuePatch) error {
	settings, err := s.cfg.Store.UpdateQueueSettings(r.Context(), queue, patch)
	if err != nil {
		return err
	}
	return s.answerQueue(w, r, settings)
}

// queuePatchFields are the fields PATCH /api/queues/{queue} takes.
var queuePatchFields = []string{"paused", "concurrency", "rate", "group_concurrency", "group_rate"}

// decodeQueuePatch turns a PATCH body into a validated store.QueuePatch. Unknown
// fields, wrong types and out-of-range values are errors, and nothing is changed.
func decodeQueuePatch(body []byte) (store.QueuePatch, error) {
	var fields map[string]json.RawMessage
	if err := decodeStrict(body, &fields); err != nil {
		return store.QueuePatch{}, err
	}
	var p store.QueuePatch
	for name, raw := range fields {
		var err error
		switch name {
		case "paused":
			p.Paused, err = decodePaused(raw)
		case "concurrency":
			p.Concurrency, err = decodeCountChange(name, raw)
		case "group_concurrency":
			p.GroupConcurrency, err = decodeCountChange(name, raw)
		case "rate":
			p.Rate, err = decodeRateChange(name, raw)
		case "group_rate":
			p.GroupRate, err = decodeRateChange(name, raw)
		default:
			err = invalidRequest(fmt.Sprintf("unknown field %q (known: %s)", name, strings.Join(queuePatchFields, ", ")))
		}
		if err != nil {
			return store.QueuePatch{}, err
		}
	}
	if err := p.Validate(); err != nil {
		return store.QueuePatch{}, invalidRequest(strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
	}
	return p, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func decodePaused(raw json.RawMessage) (*bool, error) {
	var b bool
	if isNull(raw) || json.Unmarshal(raw, &b) != nil {
		return nil, invalidRequest(fmt.Sprintf("paused must be true or false, got %s", raw))
	}
	return &b, nil
}

func decodeCountChange(field string, raw json.RawMessage) (*store.Change[int], error) {
	if isNull(raw) {
		return &store.Change[int]{}, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, invalidRequest(fmt.Sprintf("%s must be a whole number or null (no limit), got %s", field, raw))
	}
	return &store.Change[int]{To: &n}, nil
}

func decodeRateChange(field string, raw json.RawMessage) (*store.Change[store.RateLimit], error) {
	if isNull(raw) {
		return &store.Change[store.RateLimit]{}, nil
	}
	var req struct {
		Limit      *int `json:"limit"`
		PerSeconds *int `json:"per_seconds"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, invalidRequest(fmt.Sprintf(`%s must be {"limit": N, "per_seconds": S} or null (no limit), got %s`, field, raw))
	}
	if req.Limit == nil || req.PerSeconds == nil {
		return nil, invalidRequest(fmt.Sprintf("%s needs both limit and per_seconds", field))
	}
	return &store.Change[store.RateLimit]{To: &store.RateLimit{Limit: *req.Limit, PerSeconds: *req.PerSeconds}}, nil
}
