package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/cron"
	"github.com/rotaqueue/rota/internal/store"
)

// Schedules (DESIGN.md section 6): the routes under /api/schedules. Every request is
// checked here before the store sees it: the cron spec and the time zone by internal/cron
// (the error names the field at fault), the task template by the same rules as
// POST /api/tasks. The store checks again (the database computes the ticks); these
// checks make a bad request a clear 400 that changes nothing.

// --- answer shapes ----------------------------------------------------------------------

type scheduleTaskJSON struct {
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	Payload     json.RawMessage `json:"payload"`
	MaxAttempts int             `json:"max_attempts"`
}

type scheduleJSON struct {
	Name           string            `json:"name"`
	Kind           string            `json:"kind"`
	CronSpec       string            `json:"cron_spec"`
	Timezone       string            `json:"timezone"`
	Task           *scheduleTaskJSON `json:"task"` // null for kind flow
	Flow           *store.FlowBody   `json:"flow"` // null for kind task
	Enabled        bool              `json:"enabled"`
	CatchUp        store.CatchUp     `json:"catch_up"`
	Overlap        store.Overlap     `json:"overlap"`
	NextRunAt      time.Time         `json:"next_run_at"`
	LastRunAt      *time.Time        `json:"last_run_at"`
	LastEnqueuedAt *time.Time        `json:"last_enqueued_at"`
	CurrentRunID   *uuid.UUID        `json:"current_run_id"`
	WaitingRunID   *uuid.UUID        `json:"waiting_run_id"`
	SkippedTicks   int64             `json:"skipped_ticks"`
	LastSkippedAt  *time.Time        `json:"last_skipped_at"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

type schedulesJSON struct {
	Schedules []scheduleJSON `json:"schedules"`
}

// scheduleOut shows a schedule. The store keeps its template normalized (queue, payload
// and max attempts filled in).
func scheduleOut(sc *store.Schedule) scheduleJSON {
	t := sc.Task
	task := &scheduleTaskJSON{Kind: t.Kind, Queue: t.Queue, Payload: t.Payload, MaxAttempts: t.MaxAttempts}
	var flow *store.FlowBody
	if sc.Flow != nil { // kind flow: the flow in place of the task (whose columns hold a placeholder)
		body := store.FlowBodyOf(sc.Flow)
		task, flow = nil, &body
	}
	return scheduleJSON{
		Name:           sc.Name,
		Kind:           sc.Kind,
		CronSpec:       sc.CronSpec,
		Timezone:       sc.Timezone,
		Task:           task,
		Flow:           flow,
		Enabled:        sc.Enabled,
		CatchUp:        sc.CatchUp,
		Overlap:        sc.Overlap,
		NextRunAt:      sc.NextRunAt.UTC(),
		LastRunAt:      utcPtr(sc.LastRunAt),
		LastEnqueuedAt: utcPtr(sc.LastEnqueuedAt),
		CurrentRunID:   sc.CurrentRunID,
		WaitingRunID:   sc.WaitingRunID,
		SkippedTicks:   sc.SkippedTicks,
		LastSkippedAt:  utcPtr(sc.LastSkippedAt),
		CreatedAt:      sc.CreatedAt.UTC(),
		UpdatedAt:      sc.UpdatedAt.UTC(),
	}
}

// --- requests ---------------------------------------------------------------------------

// scheduleTaskRequest is the task template of a create or update: the fields of
// POST /api/tasks that make sense for every run.
type scheduleTaskRequest struct {
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"`
	Payload     json.RawMessage `json:"payload"`
	MaxAttempts *int            `json:"max_attempts"`
}

// scheduleFlowRequest is the flow of a kind flow schedule: the create body of a flow
// without idempotency_key (read only to refuse it with a clear message).
type scheduleFlowRequest struct {
	store.FlowBody
	IdempotencyKey *string `json:"idempotency_key"`
}

// params checks what the store's rules do not: no idempotency key.
func (req *scheduleFlowRequest) params() (*store.FlowParams, error) {
	if req.IdempotencyKey != nil {
		return nil, invalidRequest("flow.idempotency_key is not allowed: each run's key is schedule:<name>:<unix of the tick>")
	}
	p := req.FlowBody.Params()
	return &p, nil
}

type createScheduleRequest struct {
	Name     string               `json:"name"`
	Kind     string               `json:"kind"`
	CronSpec *string              `json:"cron_spec"`
	Timezone *string              `json:"timezone"`
	Task     *scheduleTaskRequest `json:"task"`
	Flow     *scheduleFlowRequest `json:"flow"`
	Enabled  *bool                `json:"enabled"`
	CatchUp  *string              `json:"catch_up"`
	Overlap  *string              `json:"overlap"`
}

type updateScheduleRequest struct {
	CronSpec *string              `json:"cron_spec"`
	Timezone *string              `json:"timezone"`
	Task     *scheduleTaskRequest `json:"task"`
	Flow     *scheduleFlowRequest `json:"flow"`
	Enabled  *bool                `json:"enabled"`
	CatchUp  *string              `json:"catch_up"`
	Overlap  *string              `json:"overlap"`
}

type rescheduleRequest struct {
	NextRunAt *string `json:"next_run_at"`
}

// decodeCreateSchedule turns the body of POST /api/schedules into checked params.
func decodeCreateSchedule(body []byte) (store.ScheduleParams, error) {
	var req createScheduleRequest
	if err := decodeStrict(body, &req); err != nil {
		return store.ScheduleParams{}, err
	}
	p := store.ScheduleParams{Name: req.Name, Kind: store.ScheduleKindTask, Timezone: "UTC",
		Enabled: req.Enabled, CatchUp: store.CatchUpOne, Overlap: store.OverlapAllow}
	if err := store.ValidateScheduleName(req.Name); err != nil {
		return p, err
	}
	switch {
	case req.Kind == "" && req.Flow != nil && req.Task == nil:
		p.Kind = store.ScheduleKindFlow // a flow in place of the task says which kind
	case req.Kind == store.ScheduleKindFlow:
		p.Kind = store.ScheduleKindFlow
	case req.Kind != "" && req.Kind != store.ScheduleKindTask:
		return p, invalidRequest(fmt.Sprintf("kind is the schedule's kind and must be %q or %q, got %q (the handler name goes in task.kind)",
			store.ScheduleKindTask, store.ScheduleKindFlow, req.Kind))
	}
	if req.CronSpec == nil {
		return p, invalidRequest(`cron_spec is required, e.g. "*/5 * * * *" or "@daily"`)
	}
	var err error
	if p.CronSpec, err = checkCronSpec(*req.CronSpec); err != nil {
		return p, err
	}
	if req.Timezone != nil {
		if p.Timezone, err = checkTimezone(*req.Timezone); err != nil {
			return p, err
		}
	}
	if p.Kind == store.ScheduleKindFlow {
		if req.Task != nil {
			return p, invalidRequest(`a schedule of kind flow has a flow in place of the task: leave task out`)
		}
		if req.Flow == nil {
			return p, invalidRequest(`flow is required for kind flow: {"steps": [...], "name"?, "queue"?} (POST /api/flows's body without idempotency_key)`)
		}
		if p.Flow, err = req.Flow.params(); err != nil {
			return p, err
		}
	} else {
		if req.Flow != nil {
			return p, invalidRequest(`a schedule of kind task has a task, not a flow: send "kind": "flow" with the flow, or leave flow out`)
		}
		if req.Task == nil {
			return p, invalidRequest(`task is required: {"kind": <handler name>, "queue"?, "payload"?, "max_attempts"?}`)
		}
		if p.Task, err = req.Task.template(); err != nil {
			return p, err
		}
	}
	if req.CatchUp != nil {
		if p.CatchUp, err = parseCatchUp(*req.CatchUp); err != nil {
			return p, err
		}
	}
	if req.Overlap != nil {
		if p.Overlap, err = parseOverlap(*req.Overlap); err != nil {
			return p, err
		}
	}
	// Every store rule too (lengths, what PostgreSQL can hold): what this accepts, the
	// store accepts.
	return p, p.Normalize()
}

// decodeUpdateSchedule turns the body of PATCH /api/schedules/{name} into an update.
// A task replaces the whole template.
func decodeUpdateSchedule(body []byte) (store.ScheduleUpdate, error) {
	var req updateScheduleRequest
	if err := decodeStrict(body, &req); err != nil {
		return store.ScheduleUpdate{}, err
	}
	var u store.ScheduleUpdate
	if req.CronSpec == nil && req.Timezone == nil && req.Task == nil && req.Flow == nil && req.Enabled == nil && req.CatchUp == nil && req.Overlap == nil {
		return u, invalidRequest("nothing to update: give one or more of cron_spec, timezone, task (kind task), flow (kind flow), enabled, catch_up, overlap")
	}
	if req.Flow != nil {
		if req.Task != nil {
			return u, invalidRequest("give task (kind task) or flow (kind flow), not both")
		}
		f, err := req.Flow.params()
		if err != nil {
			return u, err
		}
		u.Flow = f
	}
	if req.CronSpec != nil {
		spec, err := checkCronSpec(*req.CronSpec)
		if err != nil {
			return u, err
		}
		u.CronSpec = &spec
	}
	if req.Timezone != nil {
		tz, err := checkTimezone(*req.Timezone)
		if err != nil {
			return u, err
		}
		u.Timezone = &tz
	}
	if req.Task != nil {
		t, err := req.Task.template()
		if err != nil {
			return u, err
		}
		u.Task = &t
	}
	u.Enabled = req.Enabled
	if req.CatchUp != nil {
		c, err := parseCatchUp(*req.CatchUp)
		if err != nil {
			return u, err
		}
		u.CatchUp = &c
	}
	if req.Overlap != nil {
		o, err := parseOverlap(*req.Overlap)
		if err != nil {
			return u, err
		}
		u.Overlap = &o
	}
	return u, u.Normalize()
}

// template checks the template with the rules of POST /api/tasks and fills its defaults.
func (req *scheduleTaskRequest) template() (store.TaskTemplate, error) {
	create := createTaskRequest{Kind: req.Kind, Queue: req.Queue, Payload: req.Payload, MaxAttempts: req.MaxAttempts}
	p, err := create.params()
	if err != nil {
		return store.TaskTemplate{}, prefixError("task: ", err)
	}
	return store.TaskTemplate{Kind: p.Kind, Queue: p.Queue, Payload: p.Payload, MaxAttempts: p.MaxAttempts}, nil
}

// checkCronSpec parses a cron spec and returns it without surrounding blanks.
func checkCronSpec(spec string) (string, error) {
	parsed, err := cron.Parse(spec)
	if err != nil {
		// A *cron.SpecError reads "<field>: <what is wrong>".
		return "", invalidRequest(fmt.Sprintf("cron_spec %q is invalid: %v", spec, err))
	}
	return parsed.String(), nil
}

// checkTimezone accepts an IANA zone name that both Go and PostgreSQL read the same way
// (cron.LoadLocation: not "Local", not an abbreviation such as CET). An explicit "" is
// refused rather than read as UTC: it is more likely a mistake than a choice.
func checkTimezone(tz string) (string, error) {
	if tz == "" {
		return "", invalidRequest("timezone is empty; give an IANA zone name such as UTC or Europe/Berlin, or leave it out for UTC")
	}
	if _, err := cron.LoadLocation(tz); err != nil {
		return "", invalidRequest(fmt.Sprintf("%v; give an IANA zone name such as UTC or Europe/Berlin", err))
	}
	return tz, nil
}

func parseCatchUp(raw string) (store.CatchUp, error) {
	switch c := store.CatchUp(strings.ToLower(raw)); c {
	case store.CatchUpSkip, store.CatchUpOne, store.CatchUpAll:
		return c, nil
	}
	return "", invalidRequest(fmt.Sprintf("catch_up must be skip, one or all, got %q", raw))
}

// parseOverlap reads an overlap policy, in any case like catch_up.
func parseOverlap(raw string) (store.Overlap, error) {
	if o := store.Overlap(strings.ToLower(raw)); o.Valid() {
		return o, nil
	}
	return "", invalidRequest(fmt.Sprintf("overlap must be allow, skip, buffer_one or cancel_other, got %q", raw))
}

// parseRescheduleTime reads the next_run_at of a reschedule. A past time is allowed: the
// schedule is then due at once.
func parseRescheduleTime(body []byte) (time.Time, error) {
	var req rescheduleRequest
	if err := decodeStrict(body, &req); err != nil {
		return time.Time{}, err
	}
	if req.NextRunAt == nil || *req.NextRunAt == "" {
		return time.Time{}, invalidRequest("next_run_at is required (an RFC 3339 time such as 2030-01-02T15:04:05Z)")
	}
	return parseTime("next_run_at", *req.NextRunAt)
}

// --- handlers ---------------------------------------------------------------------------

// scheduleName reads the name in the path. A name that breaks the naming rule names no
// schedule, so it is a 404 like an unknown one.
func scheduleName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if store.ValidateScheduleName(name) != nil {
		return "", notFound(fmt.Sprintf("no schedule named %q", name))
	}
	return name, nil
}

// scheduleError words a store's ErrNotFound for the schedule named in the path.
func scheduleError(name string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound(fmt.Sprintf("no schedule named %q", name))
	}
	return err
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	list, err := s.cfg.Store.ListSchedules(r.Context())
	if err != nil {
		return err
	}
	out := schedulesJSON{Schedules: make([]scheduleJSON, len(list))}
	for i, sc := range list {
		out.Schedules[i] = scheduleOut(sc)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if err != nil {
		return err
	}
	p, err := decodeCreateSchedule(body)
	if err != nil {
		return err
	}
	sc, err := s.cfg.Store.CreateSchedule(r.Context(), p)
	if errors.Is(err, store.ErrConflict) {
		return &apiError{http.StatusConflict, codeConflict, fmt.Sprintf("a schedule named %q already exists", p.Name)}
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/schedules/"+url.PathEscape(sc.Name))
	writeJSON(w, http.StatusCreated, scheduleOut(sc))
	return nil
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.scheduleOp(w, r, s.cfg.Store.GetSchedule)
}

func (s *Server) updateSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.scheduleOp(w, r, func(ctx context.Context, name string) (*store.Schedule, error) {
		body, err := readBody(w, r, s.cfg.MaxBodyBytes, false)
		if err != nil {
			return nil, err
		}
		u, err := decodeUpdateSchedule(body)
		if err != nil {
			return nil, err
		}
		return s.cfg.Store.UpdateSchedule(ctx, name, u)
	})
}

func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.scheduleOp(w, r, s.cfg.Store.PauseSchedule)
}

func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.scheduleOp(w, r, s.cfg.Store.ResumeSchedule)
}

func (s *Server) rescheduleSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.scheduleOp(w, r, func(ctx context.Context, name string) (*store.Schedule, error) {
		body, err := readBody(w, r, s.cfg.MaxBodyBytes, false)
		if err != nil {
			return nil, err
		}
		at, err := parseRescheduleTime(body)
		if err != nil {
			return nil, err
		}
		return s.cfg.Store.RescheduleSchedule(ctx, name, at)
	})
}

// scheduleOp answers a route that applies op to the schedule named in the path and
// returns it. Get, pause and resume take no body; one sent anyway is ignored.
func (s *Server) scheduleOp(w http.ResponseWriter, r *http.Request, op func(context.Context, string) (*store.Schedule, error)) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	sc, err := op(r.Context(), name)
	if err != nil {
		return scheduleError(name, err)
	}
	writeJSON(w, http.StatusOK, scheduleOut(sc))
	return nil
}

// deleteSchedule answers 204. The runs already enqueued stay (they are tasks).
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	if err := s.cfg.Store.DeleteSchedule(r.Context(), name); err != nil {
		return scheduleError(name, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// triggerSchedule enqueues one run now, without moving next_run_at, and answers with it:
// the task, or for a kind flow schedule the flow it started.
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	t, err := s.cfg.Store.TriggerSchedule(r.Context(), name)
	if errors.Is(err, store.ErrScheduleOfKindFlow) {
		f, err := s.cfg.Store.TriggerScheduleFlow(r.Context(), name)
		if err != nil {
			return scheduleError(name, err)
		}
		w.Header().Set("Location", "/api/flows/"+f.ID.String())
		writeJSON(w, http.StatusCreated, flowOut(f)) // the flow JSON of POST /api/flows
		return nil
	}
	if err != nil {
		return scheduleError(name, err)
	}
	w.Header().Set("Location", "/api/tasks/"+t.ID.String())
	writeJSON(w, http.StatusCreated, taskOut(t))
	return nil
}

// scheduleRunsJSON is a page of a schedule's runs and, while the schedule exists, the
// ticks that got no run (catch-up or overlap): the history of its ticks.
type scheduleRunsJSON struct {
	Tasks         []taskJSON `json:"tasks"`
	NextCursor    string     `json:"next_cursor"`
	SkippedTicks  *int64     `json:"skipped_ticks,omitempty"`
	LastSkippedAt *time.Time `json:"last_skipped_at,omitempty"`
}

// listScheduleRuns pages the tasks the schedule created, newest first.
func (s *Server) listScheduleRuns(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	q, err := queryParams(r, "limit", "cursor")
	if err != nil {
		return err
	}
	p := store.ScheduleRunsParams{Name: name}
	if p.Cursor, err = single(q, "cursor"); err != nil {
		return err
	}
	if p.Limit, err = limitParam(q, store.DefaultListLimit, store.MaxListLimit); err != nil {
		return err
	}
	tasks, next, err := s.cfg.Store.ListScheduleRuns(r.Context(), p)
	if err != nil {
		return scheduleError(name, err)
	}
	out := scheduleRunsJSON{Tasks: tasksOut(tasks), NextCursor: next}
	// The runs of a deleted schedule stay listable; its counts are gone with it.
	if sc, err := s.cfg.Store.GetSchedule(r.Context(), name); err == nil {
		out.SkippedTicks, out.LastSkippedAt = &sc.SkippedTicks, utcPtr(sc.LastSkippedAt)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
