package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Schedules of kind flow (DESIGN.md section 10): the schedule carries a flow template,
// the create body of a flow without idempotency_key, and each tick starts one flow with
// the idempotency key schedule:<name>:<unix of the tick> (ScheduleRunKey), in the same
// transaction that advances next_run_at. The catch-up policies apply as for tasks. A
// flow run is the schedule's current run for overlap: it is finished once its status is
// not RUNNING. Every overlap policy applies: buffer_one holds a flow created but not
// started (every step WAITING, no task) and starts it in the transaction that ends the
// current flow; cancel_other cancels the current flow (as CancelFlow) in the claim that
// starts the next one (docs/architecture.md, "Schedules of kind flow").

// The errors of a trigger that names a schedule of the other kind (ErrInvalid).
var (
	ErrScheduleOfKindFlow = fmt.Errorf("%w: the schedule is of kind flow: trigger it with TriggerScheduleFlow", ErrInvalid)
	ErrScheduleOfKindTask = fmt.Errorf("%w: the schedule is of kind task: trigger it with TriggerSchedule", ErrInvalid)
)

// FlowBody is a flow's create body in its JSON form (POST /api/flows without
// idempotency_key): how a flow schedule keeps its template (PostgreSQL stores it as
// jsonb) and how the API reads one.
type FlowBody struct {
	Name  string     `json:"name,omitempty"`
	Queue string     `json:"queue,omitempty"`
	Steps []StepBody `json:"steps"`
}

// StepBody is one step of a FlowBody.
type StepBody struct {
	Name           string          `json:"name"`
	Kind           string          `json:"kind"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	DependsOn      []string        `json:"depends_on,omitempty"`
	ForEach        string          `json:"for_each,omitempty"`
	Queue          string          `json:"queue,omitempty"`
	MaxAttempts    int             `json:"max_attempts,omitempty"`
	Priority       int             `json:"priority,omitempty"`
	TimeoutSeconds int             `json:"timeout_seconds,omitempty"`
	GroupKey       string          `json:"group_key,omitempty"`
}

// Params is the body as FlowParams (no id, no idempotency key).
func (b FlowBody) Params() FlowParams {
	p := FlowParams{Name: b.Name, Queue: b.Queue, Steps: make([]StepParams, len(b.Steps))}
	for i, s := range b.Steps {
		p.Steps[i] = StepParams{Name: s.Name, Kind: s.Kind, Payload: bytes.Clone(s.Payload),
			DependsOn: slices.Clone(s.DependsOn), ForEach: s.ForEach, Queue: s.Queue,
			MaxAttempts: s.MaxAttempts, Priority: s.Priority, TimeoutSeconds: s.TimeoutSeconds,
			GroupKey: s.GroupKey}
	}
	return p
}

// FlowBodyOf is p as a FlowBody (its ID and IdempotencyKey are left out).
func FlowBodyOf(p *FlowParams) FlowBody {
	b := FlowBody{Name: p.Name, Queue: p.Queue, Steps: make([]StepBody, len(p.Steps))}
	for i, s := range p.Steps {
		b.Steps[i] = StepBody{Name: s.Name, Kind: s.Kind, Payload: bytes.Clone(s.Payload),
			DependsOn: slices.Clone(s.DependsOn), ForEach: s.ForEach, Queue: s.Queue,
			MaxAttempts: s.MaxAttempts, Priority: s.Priority, TimeoutSeconds: s.TimeoutSeconds,
			GroupKey: s.GroupKey}
	}
	return b
}

// EncodeFlowTemplate is a flow template as JSON (FlowBody).
func EncodeFlowTemplate(p *FlowParams) ([]byte, error) { return json.Marshal(FlowBodyOf(p)) }

// DecodeFlowTemplate reads what EncodeFlowTemplate wrote.
func DecodeFlowTemplate(raw []byte) (*FlowParams, error) {
	var b FlowBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("decode flow template: %w", err)
	}
	p := b.Params()
	return &p, nil
}

// CloneFlowParams is a deep copy of p (nil for nil).
func CloneFlowParams(p *FlowParams) *FlowParams {
	if p == nil {
		return nil
	}
	c := FlowBodyOf(p).Params()
	c.ID, c.IdempotencyKey = p.ID, p.IdempotencyKey
	return &c
}

// normalizeFlowTemplate validates a schedule's flow template as CreateFlow would (errors
// name the step) and fills its defaults, keeping it free of an id; a template with an
// idempotency key is refused (each run's key is the tick's).
func normalizeFlowTemplate(t *FlowParams) (*FlowParams, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: a schedule of kind flow needs a flow: {\"steps\": [...], \"name\"?, \"queue\"?}", ErrInvalid)
	}
	if t.IdempotencyKey != "" {
		return nil, fmt.Errorf("%w: a schedule's flow has no idempotency_key: each run's is schedule:<name>:<unix of the tick>", ErrInvalid)
	}
	c := CloneFlowParams(t)
	c.ID = uuid.Nil
	if err := c.Normalize(); err != nil {
		return nil, fmt.Errorf("flow: %w", err)
	}
	c.ID = uuid.Nil // Normalize drew one; each run gets its own
	return c, nil
}

// FlowPlaceholderTask is the task template a flow schedule's row carries: the columns
// for it are NOT NULL, and nothing enqueues it. Kind "flow" on the flow's queue, so
// lists that show a schedule's template read sensibly.
func FlowPlaceholderTask(t *FlowParams) TaskTemplate {
	return TaskTemplate{Kind: ScheduleKindFlow, Queue: t.Queue, Payload: json.RawMessage(`{}`), MaxAttempts: 1}
}

// CheckUpdateForKind refuses an update that does not fit a schedule of kind: a task
// template for a flow schedule, a flow for a task schedule. The adapters call it with
// the schedule's kind (which never changes).
func (u *ScheduleUpdate) CheckUpdateForKind(kind string) error {
	switch {
	case kind == ScheduleKindFlow && u.Task != nil:
		return fmt.Errorf("%w: a schedule of kind flow has a flow, not a task: update its flow", ErrInvalid)
	case kind != ScheduleKindFlow && u.Flow != nil:
		return fmt.Errorf("%w: a schedule of kind task has a task, not a flow: update its task", ErrInvalid)
	}
	return nil
}
