package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// Flows (DESIGN.md section 10): create, list, get, cancel and replay. Every rule about a
// flow (validation of the graph, idempotency, the state machine) lives in the store;
// this file decodes and encodes.

// --- JSON shapes ----------------------------------------------------------------------

type flowJSON struct {
	ID             uuid.UUID        `json:"id"`
	Name           *string          `json:"name"`
	Queue          string           `json:"queue"`
	Status         store.FlowStatus `json:"status"`
	IdempotencyKey *string          `json:"idempotency_key"`
	CreatedAt      time.Time        `json:"created_at"`
	UpdatedAt      time.Time        `json:"updated_at"`
	CompletedAt    *time.Time       `json:"completed_at"`
	// Steps is absent in list answers (a page of flows does not read their tasks).
	Steps []flowStepJSON `json:"steps,omitempty"`
}

type flowStepJSON struct {
	Name      string           `json:"name"`
	Kind      string           `json:"kind"`
	Queue     string           `json:"queue"`
	Status    store.StepStatus `json:"status"`
	DependsOn []string         `json:"depends_on"`
	ForEach   *string          `json:"for_each"`
	GroupKey  *string          `json:"group_key"`
	TaskIDs   []uuid.UUID      `json:"task_ids"`
	Output    json.RawMessage  `json:"output"`
	Error     *string          `json:"error"`
}

type flowListJSON struct {
	Flows      []flowJSON `json:"flows"`
	NextCursor string     `json:"next_cursor"`
}

func flowOut(f *store.Flow) flowJSON {
	out := flowJSON{
		ID:             f.ID,
		Name:           nullString(f.Name),
		Queue:          f.Queue,
		Status:         f.Status,
		IdempotencyKey: nullString(f.IdempotencyKey),
		CreatedAt:      f.CreatedAt.UTC(),
		UpdatedAt:      f.UpdatedAt.UTC(),
		CompletedAt:    utcPtr(f.CompletedAt),
	}
	if f.Steps != nil {
		out.Steps = make([]flowStepJSON, len(f.Steps))
	}
	for i, st := range f.Steps {
		out.Steps[i] = flowStepJSON{
			Name:      st.Name,
			Kind:      st.Kind,
			Queue:     st.Queue,
			Status:    st.Status,
			DependsOn: nonNil(st.DependsOn),
			ForEach:   nullString(st.ForEach),
			GroupKey:  nullString(st.GroupKey),
			TaskIDs:   nonNil(st.TaskIDs),
			Output:    st.Output,
			Error:     nullString(st.Error),
		}
	}
	return out
}

// nonNil makes an empty list [] in JSON rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// --- requests -------------------------------------------------------------------------

// createFlowRequest is the body of POST /api/flows.
type createFlowRequest struct {
	Name           string              `json:"name"`
	Queue          string              `json:"queue"`
	IdempotencyKey string              `json:"idempotency_key"`
	Steps          []createStepRequest `json:"steps"`
}

type createStepRequest struct {
	Name           string          `json:"name"`
	Kind           string          `json:"kind"`
	Payload        json.RawMessage `json:"payload"`
	DependsOn      []string        `json:"depends_on"`
	ForEach        string          `json:"for_each"`
	Queue          string          `json:"queue"`
	MaxAttempts    *int            `json:"max_attempts"`
	Priority       int             `json:"priority"`
	TimeoutSeconds int             `json:"timeout_seconds"`
	GroupKey       string          `json:"group_key"`
}

// decodeCreateFlow turns the body of POST /api/flows into FlowParams. Each step's task
// fields are checked as a task create's are (payload size and storability, an explicit
// max_attempts), with errors naming the step; the graph is the store's to check
// (FlowParams.Normalize), which names the step too.
func decodeCreateFlow(body []byte) (store.FlowParams, error) {
	var req createFlowRequest
	if err := decodeStrict(body, &req); err != nil {
		return store.FlowParams{}, err
	}
	return req.params()
}

func (req *createFlowRequest) params() (store.FlowParams, error) {
	p := store.FlowParams{Name: req.Name, Queue: req.Queue, IdempotencyKey: req.IdempotencyKey}
	if strings.ContainsRune(req.IdempotencyKey, 0) {
		return p, invalidRequest("idempotency_key must not contain NUL characters")
	}
	// The flow's own fields first, so that a bad flow queue is not blamed on a step.
	if req.Queue != "" {
		if err := store.ValidateName("queue", req.Queue); err != nil {
			return p, err
		}
	}
	if req.Name != "" {
		if err := store.ValidateName("flow name", req.Name); err != nil {
			return p, err
		}
	}
	if len(req.Steps) > store.MaxFlowSteps {
		return p, &apiError{http.StatusRequestEntityTooLarge, codePayloadTooLarge,
			fmt.Sprintf("steps holds %d steps, more than the %d allowed in one flow", len(req.Steps), store.MaxFlowSteps)}
	}
	p.Steps = make([]store.StepParams, len(req.Steps))
	for i, st := range req.Steps {
		// The step's task fields, checked as a task create checks them.
		task := createTaskRequest{Kind: st.Kind, Queue: st.Queue, Payload: st.Payload,
			MaxAttempts: st.MaxAttempts, Priority: st.Priority, TimeoutSeconds: st.TimeoutSeconds,
			GroupKey: st.GroupKey}
		if task.Queue == "" {
			task.Queue = req.Queue // "" too is fine: the default queue
		}
		tp, err := task.params()
		if err != nil {
			return p, prefixError(stepPrefix(i, st.Name), err)
		}
		p.Steps[i] = store.StepParams{
			Name:           st.Name,
			Kind:           st.Kind,
			Payload:        tp.Payload,
			DependsOn:      st.DependsOn,
			ForEach:        st.ForEach,
			Queue:          st.Queue,
			MaxAttempts:    tp.MaxAttempts,
			Priority:       st.Priority,
			TimeoutSeconds: st.TimeoutSeconds,
			GroupKey:       st.GroupKey,
		}
	}
	if err := p.Normalize(); err != nil {
		return p, err
	}
	return p, nil
}

// stepPrefix names a step in an error: by name, or by position when it has none.
func stepPrefix(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("steps[%d]: ", i)
	}
	return fmt.Sprintf("step %q: ", name)
}

// --- handlers -------------------------------------------------------------------------

func (s *Server) createFlow(w http.ResponseWriter, r *http.Request) error {
	// A flow carries up to 1,000 steps, each with its payload: the batch limit.
	body, err := readBody(w, r, s.cfg.MaxBatchBodyBytes, false)
	if err != nil {
		return err
	}
	p, err := decodeCreateFlow(body)
	if err != nil {
		return err
	}
	res, err := s.cfg.Store.CreateFlow(r.Context(), p)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/flows/"+res.Flow.ID.String())
	status := http.StatusCreated
	if res.Existing {
		status = http.StatusOK
	}
	writeJSON(w, status, flowOut(res.Flow))
	return nil
}

func (s *Server) listFlows(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r, "status", "name", "limit", "cursor")
	if err != nil {
		return err
	}
	p := store.FlowListParams{}
	for _, v := range q["status"] {
		for part := range strings.SplitSeq(v, ",") {
			st := store.FlowStatus(strings.ToUpper(strings.TrimSpace(part)))
			if !st.Valid() {
				return invalidRequest(fmt.Sprintf("status %q is not one of %s", part, flowStatusList()))
			}
			if !slices.Contains(p.Statuses, st) {
				p.Statuses = append(p.Statuses, st)
			}
		}
	}
	if p.Name, err = single(q, "name"); err != nil {
		return err
	}
	if p.Cursor, err = single(q, "cursor"); err != nil {
		return err
	}
	if p.Limit, err = limitParam(q, store.DefaultListLimit, store.MaxListLimit); err != nil {
		return err
	}
	flows, next, err := s.cfg.Store.ListFlows(r.Context(), p)
	if err != nil {
		return err
	}
	out := flowListJSON{Flows: make([]flowJSON, len(flows)), NextCursor: next}
	for i, f := range flows {
		out.Flows[i] = flowOut(f)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func flowStatusList() string {
	names := make([]string, len(store.AllFlowStatuses))
	for i, st := range store.AllFlowStatuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

func (s *Server) getFlow(w http.ResponseWriter, r *http.Request) error {
	return s.flowOp(w, r, s.cfg.Store.GetFlow)
}

func (s *Server) cancelFlow(w http.ResponseWriter, r *http.Request) error {
	return s.flowOp(w, r, s.cfg.Store.CancelFlow)
}

func (s *Server) replayFlow(w http.ResponseWriter, r *http.Request) error {
	return s.flowOp(w, r, s.cfg.Store.ReplayFlow)
}

// flowOp answers a route that applies op to the flow named in the path and returns it.
// Cancel and replay take no body; one sent anyway is ignored (as for tasks).
func (s *Server) flowOp(w http.ResponseWriter, r *http.Request, op func(context.Context, uuid.UUID) (*store.Flow, error)) error {
	raw := r.PathValue("id")
	id, err := uuid.Parse(raw)
	if err != nil {
		return notFound(fmt.Sprintf("no flow with id %q: not a UUID", raw))
	}
	f, err := op(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, flowOut(f))
	return nil
}
