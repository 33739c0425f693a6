package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/tracing"
)

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, false)
	if err != nil {
		return err
	}
	p, err := decodeCreateTask(body)
	if err != nil {
		return err
	}
	p.TraceContext = tracing.Inject(r.Context()) // the request's span (traced)
	res, err := s.cfg.Store.CreateTasks(r.Context(), []store.CreateParams{p})
	if err != nil {
		return err
	}
	if len(res) != 1 {
		return fmt.Errorf("create task: the store returned %d results for 1 task", len(res))
	}
	w.Header().Set("Location", "/api/tasks/"+res[0].Task.ID.String())
	status := http.StatusCreated
	if res[0].Existing {
		status = http.StatusOK
	}
	out := taskOut(res[0].Task)
	out.Warnings = s.createWarnings(r.Context(), []store.CreateParams{p})
	writeJSON(w, status, out)
	return nil
}

// createTaskBatch creates every task or none: the entries are all decoded and validated
// before the one store call, which is itself all or nothing.
func (s *Server) createTaskBatch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.MaxBatchBodyBytes, false)
	if err != nil {
		return err
	}
	params, err := decodeCreateBatch(body)
	if err != nil {
		return err
	}
	trace := tracing.Inject(r.Context()) // the request's span (traced)
	for i := range params {
		params[i].TraceContext = trace
	}
	res, err := s.cfg.Store.CreateTasks(r.Context(), params)
	if err != nil {
		return err
	}
	if len(res) != len(params) {
		return fmt.Errorf("create tasks: the store returned %d results for %d tasks", len(res), len(params))
	}
	out := tasksJSON{Tasks: make([]taskJSON, len(res))}
	for i, cr := range res {
		out.Tasks[i] = taskOut(cr.Task)
	}
	out.Warnings = s.createWarnings(r.Context(), params)
	writeTasksJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "status", "queue", "kind", "limit", "cursor")
	if err != nil {
		return err
	}
	p := store.ListParams{}
	for _, v := range q["status"] {
		for part := range strings.SplitSeq(v, ",") {
			st := store.Status(strings.ToUpper(strings.TrimSpace(part)))
			if !st.Valid() {
				return invalidRequest(fmt.Sprintf("status %q is not one of %s", part, statusList()))
			}
			if !slices.Contains(p.Statuses, st) {
				p.Statuses = append(p.Statuses, st)
			}
		}
	}
	if p.Queue, err = single(q, "queue"); err != nil {
		return err
	}
	if p.Kind, err = single(q, "kind"); err != nil {
		return err
	}
	if p.Cursor, err = single(q, "cursor"); err != nil {
		return err
	}
	if p.Limit, err = limitParam(q, store.DefaultListLimit, store.MaxListLimit); err != nil {
		return err
	}
	tasks, next, err := s.cfg.Store.ListTasks(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskListJSON{Tasks: tasksOut(tasks), NextCursor: next})
	return nil
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) error {
	id, err := parseID(r)
	if err != nil {
		return err
	}
	t, err := s.cfg.Store.GetTask(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskOut(t).withStep(t))
	return nil
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) error {
	return s.taskOp(w, r, s.cfg.Store.CancelTask)
}

func (s *Server) replayTask(w http.ResponseWriter, r *http.Request) error {
	return s.taskOp(w, r, s.cfg.Store.ReplayTask)
}

// taskOp answers a route that applies op to the task named in the path and returns it.
// Cancel and replay take no body; one sent anyway is ignored.
func (s *Server) taskOp(w http.ResponseWriter, r *http.Request, op func(context.Context, uuid.UUID) (*store.Task, error)) error {
	id, err := parseID(r)
	if err != nil {
		return err
	}
	t, err := op(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskOut(t))
	return nil
}

func (s *Server) listAttempts(w http.ResponseWriter, r *http.Request) error {
	id, err := parseID(r)
	if err != nil {
		return err
	}
	as, err := s.cfg.Store.ListAttempts(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, attemptsOut(as))
	return nil
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	qs, err := s.cfg.Stats.Stats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, statsOut(qs))
	return nil
}

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "queue", "kind", "reason", "limit", "cursor")
	if err != nil {
		return err
	}
	p := store.DeadLetterParams{}
	if p.Queue, err = single(q, "queue"); err != nil {
		return err
	}
	if p.Kind, err = single(q, "kind"); err != nil {
		return err
	}
	if p.Cursor, err = single(q, "cursor"); err != nil {
		return err
	}
	reason, err := single(q, "reason")
	if err != nil {
		return err
	}
	if p.Reason, err = deadLetterReason(reason); err != nil {
		return err
	}
	if p.Limit, err = limitParam(q, store.DefaultListLimit, store.MaxListLimit); err != nil {
		return err
	}
	events, next, err := s.cfg.Store.ListDeadLetters(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deadLettersOut(events, next))
	return nil
}

type replayDeadLettersRequest struct {
	TaskIDs []string `json:"task_ids"`
	Queue   string   `json:"queue"`
	Kind    string   `json:"kind"`
	Reason  string   `json:"reason"`
	Limit   *int     `json:"limit"`
}

// replayDeadLetters replays DEAD and FAILED tasks in bulk, oldest first. Without a limit
// it replays up to 100, or every listed task when task_ids is given.
func (s *Server) replayDeadLetters(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, true)
	if err != nil {
		return err
	}
	var req replayDeadLettersRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	if len(req.TaskIDs) > maxReplayLimit {
		return invalidRequest(fmt.Sprintf("task_ids holds %d ids, more than the %d allowed", len(req.TaskIDs), maxReplayLimit))
	}
	p := store.ReplayParams{Queue: req.Queue, Kind: req.Kind, Limit: defaultReplayLimit}
	if req.TaskIDs != nil {
		p.TaskIDs = make([]uuid.UUID, 0, len(req.TaskIDs))
		for i, raw := range req.TaskIDs {
			id, err := uuid.Parse(raw)
			if err != nil {
				return invalidRequest(fmt.Sprintf("task_ids[%d] %q is not a task id (a UUID)", i, raw))
			}
			p.TaskIDs = append(p.TaskIDs, id)
		}
		p.Limit = max(len(p.TaskIDs), 1)
	}
	if p.Reason, err = deadLetterReason(req.Reason); err != nil {
		return err
	}
	if req.Limit != nil {
		if *req.Limit < 1 || *req.Limit > maxReplayLimit {
			return invalidRequest(fmt.Sprintf("limit must be between 1 and %d, got %d", maxReplayLimit, *req.Limit))
		}
		p.Limit = *req.Limit
	}
	if req.TaskIDs != nil && len(req.TaskIDs) == 0 {
		// An explicit empty list selects nothing (rather than everything, as no list does).
		writeJSON(w, http.StatusOK, replayedJSON{Tasks: []taskJSON{}})
		return nil
	}
	tasks, err := s.cfg.Store.ReplayTasks(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, replayedJSON{Replayed: len(tasks), Tasks: tasksOut(tasks)})
	return nil
}

func deadLetterReason(raw string) (store.Status, error) {
	switch st := store.Status(strings.ToUpper(raw)); st {
	case "", store.StatusDead, store.StatusFailed:
		return st, nil
	}
	return "", invalidRequest(fmt.Sprintf("reason must be DEAD or FAILED, got %q", raw))
}

// queryParams parses the query string, rejecting parameters the route does not know: a
// misspelt filter must not silently list everything.
func queryParams(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidRequest("malformed query string: " + err.Error())
	}
	for k := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, invalidRequest(fmt.Sprintf("unknown query parameter %q: this route takes none", k))
			}
			return nil, invalidRequest(fmt.Sprintf("unknown query parameter %q (known: %s)", k, strings.Join(allowed, ", ")))
		}
	}
	return q, nil
}

func single(q url.Values, name string) (string, error) {
	switch vs := q[name]; len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return "", invalidRequest(fmt.Sprintf("query parameter %q is given more than once", name))
}

func limitParam(q url.Values, def, maxLimit int) (int, error) {
	raw, err := single(q, "limit")
	if err != nil || raw == "" {
		return def, err
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxLimit {
		return 0, invalidRequest(fmt.Sprintf("limit must be an integer between 1 and %d, got %q", maxLimit, raw))
	}
	return n, nil
}

func statusList() string {
	names := make([]string, len(store.AllStatuses))
	for i, st := range store.AllStatuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, statusJSON{Status: "ok"})
	return nil
}

// readyz answers 200 when the store answers a ping within readyTimeout. The failure
// detail is logged, not shown: the probe is unauthenticated.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.cfg.Logger.Warn("api: readiness check failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "the store is not reachable")
		return nil
	}
	writeJSON(w, http.StatusOK, statusJSON{Status: "ready"})
	return nil
}
