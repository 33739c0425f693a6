package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// A flow is a directed acyclic graph of steps (DESIGN.md section 10). Each step runs as
// ordinary tasks of rota.tasks (same state machine, leases, retries, dead letters and
// delivery modes); the store moves the flow forward itself: a step's task(s) are created
// in the same transaction that records the success of the last of its dependencies, so
// no orchestrator process exists and a crash at any point neither loses a step nor
// creates one twice. PostgreSQL does it in triggers (migration 0019, docs/architecture.md
// "Flows"); the memory store mirrors them.
//
// The rules every adapter follows (the conformance suite in storetest checks them):
//
//   - A step with no dependencies gets its task at create. A step gets its task(s) when
//     the last of its dependencies succeeds, with Task.Inputs = an object mapping each
//     dependency's step name to that step's output.
//   - A step with ForEach = d runs one task per element of d's output array, each with
//     Task.Item (the element) and Task.Index (0-based). An empty array makes the step
//     succeed at once, with output []; an output that is not an array makes the step
//     FAILED (Error says why, no task) and the flow FAILED.
//   - A step's output is its task's output; a ForEach step's is the array of its tasks'
//     outputs in element order (fan-in). The step succeeds when all of its tasks did.
//   - A flow is SUCCEEDED in the transaction in which its last step succeeds.
//   - Failure: a step task that ends DEAD, FAILED or CANCELED while the flow is RUNNING
//     (not through the flow's own failure or cancel) makes the flow FAILED in the same
//     transaction: steps still waiting become CANCELED, PENDING and ENQUEUED tasks of
//     the flow become CANCELED, PROCESSING ones get a cancel request (as CancelTask
//     does: CancelRequestedAt and a CancelRequested notification).
//   - A step never has more than one task row per element (PostgreSQL: a unique index on
//     (flow_id, flow_step, flow_index)); replays replay those rows.

// FlowStatus is a flow's state.
type FlowStatus string

const (
	FlowRunning   FlowStatus = "RUNNING"
	FlowSucceeded FlowStatus = "SUCCEEDED"
	FlowFailed    FlowStatus = "FAILED"
	FlowCanceled  FlowStatus = "CANCELED"
)

// AllFlowStatuses lists every flow status.
var AllFlowStatuses = []FlowStatus{FlowRunning, FlowSucceeded, FlowFailed, FlowCanceled}

// Valid reports whether s is a known flow status.
func (s FlowStatus) Valid() bool { return slices.Contains(AllFlowStatuses, s) }

// Ended reports whether the flow will not move on by itself (only ReplayFlow revives a
// FAILED or CANCELED flow).
func (s FlowStatus) Ended() bool { return s != FlowRunning }

// StepStatus is a step's status as the flow JSON shows it: StepWaiting until its task(s)
// exist, then a task status (see StepStatusOf).
type StepStatus string

// StepWaiting: the step's dependencies have not all succeeded yet. The other step
// statuses are the task statuses' names.
const StepWaiting StepStatus = "WAITING"

// StepState is what a store keeps about a step besides its tasks; StepStatusOf turns it
// and the tasks' statuses into the StepStatus a reader sees.
type StepState string

const (
	StepStateWaiting   StepState = "WAITING"   // dependencies not all succeeded; no task
	StepStateStarted   StepState = "STARTED"   // its task(s) exist (maybe zero: an empty for_each)
	StepStateSucceeded StepState = "SUCCEEDED" // all its tasks succeeded; Output is set
	StepStateFailed    StepState = "FAILED"    // could not start (for_each over a non-array); no task
	StepStateCanceled  StepState = "CANCELED"  // can no longer run (its flow failed or was canceled); no task
)

// StepStatusOf is a step's status from its state and its tasks' statuses (DESIGN.md
// section 10): WAITING until its tasks exist; a single-task step has its task's status;
// a for_each step is SUCCEEDED when all its tasks succeeded, FAILED when any ended DEAD or
// FAILED, CANCELED when any was canceled, otherwise PROCESSING while any runs and PENDING
// before. A step that never got a task is CANCELED or FAILED as its state says.
func StepStatusOf(state StepState, forEach bool, tasks []Status) StepStatus {
	switch state {
	case StepStateWaiting:
		return StepWaiting
	case StepStateFailed:
		return StepStatus(StatusFailed)
	case StepStateCanceled:
		return StepStatus(StatusCanceled)
	}
	if !forEach && len(tasks) == 1 {
		return StepStatus(tasks[0])
	}
	has := func(sts ...Status) bool {
		return slices.ContainsFunc(tasks, func(t Status) bool { return slices.Contains(sts, t) })
	}
	switch {
	case !has(StatusPending, StatusEnqueued, StatusProcessing, StatusFailed, StatusDead, StatusCanceled):
		return StepStatus(StatusSucceeded) // all succeeded, or an empty for_each
	case has(StatusDead, StatusFailed):
		return StepStatus(StatusFailed)
	case has(StatusCanceled):
		return StepStatus(StatusCanceled)
	case has(StatusProcessing):
		return StepStatus(StatusProcessing)
	}
	return StepStatus(StatusPending)
}

// FlowParams is the create body of a flow (DESIGN.md section 10). Normalize validates it;
// the adapters reject invalid params with ErrInvalid (naming the step) and write nothing.
type FlowParams struct {
	ID             uuid.UUID // uuid.Nil: the adapter assigns a time-ordered v7 id
	Name           string    // optional; when set, a kind/queue-style name (ListFlows filters by it)
	Queue          string    // the steps' queue unless a step names its own; "" = "default"
	IdempotencyKey string    // same rules as a task's: free again once its flow ended FAILED or CANCELED
	Steps          []StepParams
}

// StepParams is one step of FlowParams.
type StepParams struct {
	Name           string // unique in the flow; the kind/queue name rule
	Kind           string
	Payload        json.RawMessage // nil = {}; every task of the step carries it
	DependsOn      []string        // other steps of the flow, in any order
	ForEach        string          // "" or one of DependsOn: one task per element of its output
	Queue          string          // "" = the flow's queue
	MaxAttempts    int             // 0 = DefaultMaxAttempts
	Priority       int
	TimeoutSeconds int
	// GroupKey: every task of the step (each for_each element's too) gets it, so the
	// queue's group limits and fair claiming apply to step tasks; the task rule
	// (ValidateGroupKey), "" = none.
	GroupKey string
}

// MaxFlowSteps is the most steps one flow may have.
const MaxFlowSteps = 1000

// Normalize fills defaults (queue, payloads, max attempts, the id) and validates the
// flow: at least one and at most MaxFlowSteps steps, each valid as a task would be, names
// unique, dependencies naming other steps of the flow (no repeats), ForEach one of the
// step's own dependencies, and no cycle (a step depending on itself included). Errors are
// ErrInvalid and name the step.
func (p *FlowParams) Normalize() error {
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if err := ValidateName("queue", p.Queue); err != nil {
		return err
	}
	if p.Name != "" {
		if err := ValidateName("flow name", p.Name); err != nil {
			return err
		}
	}
	if len(p.IdempotencyKey) > MaxIdempotencyKeyLen {
		return fmt.Errorf("%w: idempotency_key is longer than %d characters", ErrInvalid, MaxIdempotencyKeyLen)
	}
	switch {
	case len(p.Steps) == 0:
		return fmt.Errorf("%w: a flow needs at least one step", ErrInvalid)
	case len(p.Steps) > MaxFlowSteps:
		return fmt.Errorf("%w: a flow has at most %d steps, got %d", ErrInvalid, MaxFlowSteps, len(p.Steps))
	}
	steps := slices.Clone(p.Steps)
	index := make(map[string]int, len(steps))
	for i := range steps {
		st := &steps[i]
		if err := ValidateName(fmt.Sprintf("the name of step %d", i), st.Name); err != nil {
			return err
		}
		if _, dup := index[st.Name]; dup {
			return fmt.Errorf("%w: step %q: the name is used by another step", ErrInvalid, st.Name)
		}
		index[st.Name] = i
		if st.Queue == "" {
			st.Queue = p.Queue
		}
		// A step is validated as the task it becomes.
		task := CreateParams{ID: uuid.Nil, Queue: st.Queue, Kind: st.Kind, Payload: st.Payload,
			Priority: st.Priority, MaxAttempts: st.MaxAttempts, TimeoutSeconds: st.TimeoutSeconds,
			GroupKey: st.GroupKey}
		if err := task.Normalize(); err != nil {
			return fmt.Errorf("step %q: %w", st.Name, err)
		}
		st.Payload, st.MaxAttempts = task.Payload, task.MaxAttempts
		st.DependsOn = slices.Clone(st.DependsOn)
	}
	for i := range steps {
		st := &steps[i]
		seen := map[string]bool{}
		for _, d := range st.DependsOn {
			switch _, ok := index[d]; {
			case d == st.Name:
				return fmt.Errorf("%w: step %q depends on itself", ErrInvalid, st.Name)
			case !ok:
				return fmt.Errorf("%w: step %q depends on %q, which is no step of this flow", ErrInvalid, st.Name, d)
			case seen[d]:
				return fmt.Errorf("%w: step %q names %q twice in depends_on", ErrInvalid, st.Name, d)
			}
			seen[d] = true
		}
		if st.ForEach != "" && !seen[st.ForEach] {
			return fmt.Errorf("%w: step %q: for_each %q must be one of its depends_on", ErrInvalid, st.Name, st.ForEach)
		}
	}
	if name, ok := findCycle(steps, index); ok {
		return fmt.Errorf("%w: step %q is part of a dependency cycle", ErrInvalid, name)
	}
	if p.ID == uuid.Nil {
		p.ID = NewID()
	}
	p.Steps = steps
	return nil
}

// findCycle reports a step on a dependency cycle, if any (a depth-first search; steps are
// visited in create order, so the answer is stable).
func findCycle(steps []StepParams, index map[string]int) (string, bool) {
	const (
		unvisited = iota
		onPath
		done
	)
	mark := make([]int, len(steps))
	var visit func(i int) (int, bool)
	visit = func(i int) (int, bool) {
		mark[i] = onPath
		for _, d := range steps[i].DependsOn {
			j := index[d]
			switch mark[j] {
			case onPath:
				return j, true
			case unvisited:
				if k, found := visit(j); found {
					return k, true
				}
			}
		}
		mark[i] = done
		return 0, false
	}
	for i := range steps {
		if mark[i] == unvisited {
			if k, found := visit(i); found {
				return steps[k].Name, true
			}
		}
	}
	return "", false
}

// Flow is one flow with its steps, as GetFlow reads it.
type Flow struct {
	ID             uuid.UUID
	Name           string // "" when none
	Queue          string
	Status         FlowStatus
	IdempotencyKey string // "" when none
	CreatedAt      time.Time
	UpdatedAt      time.Time
	CompletedAt    *time.Time // set once the flow ended (nil again after a replay)
	// Steps in create order. ListFlows leaves it nil (a page of flows would otherwise
	// read every task of every flow); GetFlow fills it.
	Steps []FlowStep
}

// FlowStep is one step of a flow.
type FlowStep struct {
	Name           string
	Kind           string
	Queue          string
	DependsOn      []string // never nil
	ForEach        string   // "" when none
	Status         StepStatus
	State          StepState       // what the store keeps (Status is derived from it and the tasks)
	TaskIDs        []uuid.UUID     // in element order; empty while WAITING
	TaskStatuses   []Status        // the status of each of TaskIDs (same order), for progress
	Output         json.RawMessage // nil until the step SUCCEEDED
	Error          string          // why the step failed ("" when it did not)
	Payload        json.RawMessage
	MaxAttempts    int
	Priority       int
	TimeoutSeconds int
	GroupKey       string // "" when none; every task of the step carries it
}

// FlowCreateResult is the flow a create produced, or the existing flow its idempotency
// key named (Existing = true: HTTP 200 instead of 201).
type FlowCreateResult struct {
	Flow     *Flow
	Existing bool
}

// FlowListParams filters and pages ListFlows. Results are newest first (by id, which is
// time-ordered); Cursor is the NextCursor of the previous page.
type FlowListParams struct {
	Statuses []FlowStatus // empty = all
	Name     string       // "" = any
	Limit    int          // 0 = 50; at most 1000
	Cursor   string
}

// Check validates the filters and returns the page size with its default applied.
func (p FlowListParams) Check() (int, error) {
	for _, st := range p.Statuses {
		if !st.Valid() {
			return 0, fmt.Errorf("%w: unknown flow status %q", ErrInvalid, st)
		}
	}
	if err := ValidateFilter("name", p.Name); err != nil {
		return 0, err
	}
	return NormalizeLimit(p.Limit)
}

// ErrFlowNotFound is what the adapters wrap when no flow has the id asked for. It is
// ErrNotFound (errors.Is(err, ErrNotFound) holds) with a message about a flow.
var ErrFlowNotFound error = flowNotFound{}

type flowNotFound struct{}

func (flowNotFound) Error() string        { return "flow not found" }
func (flowNotFound) Is(target error) bool { return target == ErrNotFound }

// FlowStore is the flow half of Store; both adapters implement it.
type FlowStore interface {
	// CreateFlow validates params (FlowParams.Normalize: ErrInvalid naming the step,
	// nothing written) and inserts the flow, its steps and the tasks of the steps without
	// dependencies, all or nothing. With an idempotency key that names a flow that is not
	// FAILED or CANCELED, nothing is inserted and the result is that flow with Existing
	// = true (the database guarantees it with a unique index, not a read-then-write).
	CreateFlow(ctx context.Context, params FlowParams) (FlowCreateResult, error)
	// GetFlow returns a flow with its steps (their status, task ids in element order,
	// output and error). ErrFlowNotFound (an ErrNotFound) when there is none.
	GetFlow(ctx context.Context, id uuid.UUID) (*Flow, error)
	// ListFlows pages through flows newest first, filtered by status and name; the flows
	// come without Steps. nextCursor is "" on the last page.
	ListFlows(ctx context.Context, params FlowListParams) (flows []*Flow, nextCursor string, err error)
	// CancelFlow makes a RUNNING flow CANCELED: its waiting steps become CANCELED, its
	// PENDING and ENQUEUED tasks CANCELED, its PROCESSING tasks get a cancel request (their
	// workers record CANCELED, which then changes nothing more). An already CANCELED flow
	// is returned unchanged; ErrIllegalTransition for a SUCCEEDED or FAILED one;
	// ErrNotFound for none.
	CancelFlow(ctx context.Context, id uuid.UUID) (*Flow, error)
	// ReplayFlow makes a FAILED or CANCELED flow RUNNING again: the DEAD, FAILED and
	// CANCELED tasks of its steps are replayed (as ReplayTask does: PENDING, a fresh
	// attempt budget, a REPLAYED event; never a second task row for an element), steps
	// that never got a task wait again and get it when their dependencies succeed (at
	// once if they already did). A step whose tasks all succeeded meanwhile succeeds.
	// ErrIllegalTransition for a RUNNING or SUCCEEDED flow; ErrConflict while a task of
	// the flow still runs (a cancel request its worker has not answered: its CANCELED
	// would fail the flow again; replay once it ended) or when a live flow now holds the
	// flow's idempotency key; ErrNotFound for none.
	ReplayFlow(ctx context.Context, id uuid.UUID) (*Flow, error)
}
