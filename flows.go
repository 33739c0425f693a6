package rota

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/store"
)

// A flow is a directed acyclic graph of steps, each run as ordinary tasks (DESIGN.md
// section 10). The database moves it forward: a step's task is created in the same
// transaction that records the last of its dependencies' successes, so no orchestrator
// process exists and a crash at any point neither loses a step nor creates one twice.
//
// A step's handler is an ordinary handler: it reads its dependencies' outputs with
// Job.Inputs or Job.Input, the element of a for_each step with Job.Item and Job.Index,
// and returns its own result with Job.SetOutput.

// Flow is a flow as the store records it, with its steps (in create order) when read
// by GetFlow; ListFlows leaves Steps nil.
type Flow = store.Flow

// FlowStep is one step of a Flow: its status, task ids in element order, output (a
// for_each step's is the array of its tasks' outputs in element order) and error.
type FlowStep = store.FlowStep

// FlowStatus is a flow's state.
type FlowStatus = store.FlowStatus

// The flow statuses.
const (
	FlowRunning   = store.FlowRunning
	FlowSucceeded = store.FlowSucceeded // in the transaction of its last step's success
	FlowFailed    = store.FlowFailed    // a step's task ended DEAD, FAILED or CANCELED
	FlowCanceled  = store.FlowCanceled
)

// StepStatus is a step's status: StepWaiting until its task(s) exist, then a task
// status (a for_each step's summarizes its tasks').
type StepStatus = store.StepStatus

// StepWaiting: the step's dependencies have not all succeeded yet.
const StepWaiting = store.StepWaiting

// FlowListParams filters and pages ListFlows (newest first; Cursor is the previous
// page's next cursor).
type FlowListParams = store.FlowListParams

// FlowParams describes a new flow. Only Steps is required.
type FlowParams struct {
	// Name, optional, labels the flow (ListFlows filters by it); a kind-style name.
	Name string
	// Queue is the steps' queue unless a step names its own. Default "default".
	Queue string
	// IdempotencyKey, when set, makes the start idempotent: while a flow with this key
	// is RUNNING or SUCCEEDED, starting the key again returns that flow. A FAILED or
	// CANCELED flow frees its key.
	IdempotencyKey string
	// Steps, at least one and at most 1,000, in any order.
	Steps []StepParams
}

// StepParams describes one step of a flow. Name and Kind are required.
type StepParams struct {
	// Name is unique in the flow; a kind-style name.
	Name string
	// Kind names the handler that runs the step's task(s).
	Kind string
	// Payload, as EnqueueParams.Payload; every task of the step carries it.
	Payload any
	// DependsOn names other steps of the flow: the step starts once all of them
	// succeeded, with their outputs as its inputs.
	DependsOn []string
	// ForEach, when set, names one of DependsOn whose output must be a JSON array: the
	// step runs one task per element (Job.Item, Job.Index), and its output is the array
	// of their outputs in element order. An empty array succeeds at once.
	ForEach string
	// Queue, MaxAttempts, Priority and Timeout are as in EnqueueParams; an empty Queue
	// is the flow's.
	Queue       string
	MaxAttempts int
	Priority    int
	Timeout     time.Duration
	// GroupKey, as EnqueueParams.GroupKey, goes to every task of the step (each ForEach
	// element's too): the queue's group limits and fair claiming apply to them.
	GroupKey string
}

// StartFlowResult is what StartFlowWithResult returns: the flow, and whether it already
// existed (an idempotency-key hit) rather than being started by this call.
type StartFlowResult struct {
	Flow     *Flow
	Existing bool
}

// StartFlow validates the whole graph and starts the flow: the steps without
// dependencies get their tasks at once. Invalid params (a cycle, an unknown dependency,
// a ForEach outside DependsOn, a bad step) return an error wrapping ErrInvalid that
// names the step, and write nothing. When p.IdempotencyKey names a live or succeeded
// flow, that flow is returned.
func (c *Client) StartFlow(ctx context.Context, p FlowParams) (*Flow, error) {
	res, err := c.StartFlowWithResult(ctx, p)
	if err != nil {
		return nil, err
	}
	return res.Flow, nil
}

// StartFlowWithResult is StartFlow, reporting whether the flow already existed because
// its idempotency key named a live or succeeded flow (Existing = true).
func (c *Client) StartFlowWithResult(ctx context.Context, p FlowParams) (StartFlowResult, error) {
	fp, err := c.flowParams(p)
	if err != nil {
		return StartFlowResult{}, fmt.Errorf("start flow: %w", err)
	}
	res, err := c.store.CreateFlow(ctx, fp)
	if err != nil {
		return StartFlowResult{}, fmt.Errorf("start flow: %w", err)
	}
	return StartFlowResult{Flow: res.Flow, Existing: res.Existing}, nil
}

// flowTxCreator is what a store that can start a flow inside a caller's transaction
// provides (the PostgreSQL store).
type flowTxCreator interface {
	CreateFlowTx(ctx context.Context, tx pgx.Tx, params store.FlowParams) (store.FlowCreateResult, error)
}

// StartFlowTx starts the flow inside the caller's PostgreSQL transaction: the flow and
// its first tasks exist (and workers see them) only if tx commits, so a flow can be
// started atomically with the caller's own rows. Only a client from NewPostgresClient
// supports it (ErrTxNotSupported otherwise). An error may leave tx aborted: roll it
// back.
func (c *Client) StartFlowTx(ctx context.Context, tx pgx.Tx, p FlowParams) (StartFlowResult, error) {
	ftc, ok := c.store.(flowTxCreator)
	if !ok {
		return StartFlowResult{}, fmt.Errorf("start flow tx: %w", ErrTxNotSupported)
	}
	if tx == nil {
		return StartFlowResult{}, fmt.Errorf("start flow tx: %w: tx is nil", ErrInvalid)
	}
	fp, err := c.flowParams(p)
	if err != nil {
		return StartFlowResult{}, fmt.Errorf("start flow tx: %w", err)
	}
	res, err := ftc.CreateFlowTx(ctx, tx, fp)
	if err != nil {
		return StartFlowResult{}, fmt.Errorf("start flow tx: %w", err)
	}
	return StartFlowResult{Flow: res.Flow, Existing: res.Existing}, nil
}

// flowParams turns FlowParams into the store's, checking each step's task fields as
// Enqueue checks a task's (the store checks the graph).
func (c *Client) flowParams(p FlowParams) (store.FlowParams, error) {
	fp := store.FlowParams{Name: p.Name, Queue: p.Queue, IdempotencyKey: p.IdempotencyKey,
		Steps: make([]store.StepParams, len(p.Steps))}
	for i, st := range p.Steps {
		queue := st.Queue
		if queue == "" {
			queue = p.Queue
		}
		cp, err := c.createParams(EnqueueParams{Kind: st.Kind, Queue: queue, Payload: st.Payload,
			MaxAttempts: st.MaxAttempts, Priority: st.Priority, Timeout: st.Timeout, GroupKey: st.GroupKey})
		if err != nil {
			name := fmt.Sprintf("%q", st.Name)
			if st.Name == "" {
				name = fmt.Sprint(i)
			}
			return fp, fmt.Errorf("step %s: %w", name, err)
		}
		fp.Steps[i] = store.StepParams{Name: st.Name, Kind: st.Kind, Payload: cp.Payload, DependsOn: st.DependsOn,
			ForEach: st.ForEach, Queue: st.Queue, MaxAttempts: st.MaxAttempts, Priority: st.Priority,
			TimeoutSeconds: cp.TimeoutSeconds, GroupKey: cp.GroupKey}
	}
	return fp, nil
}

// GetFlow returns the flow with its steps, or an error wrapping ErrNotFound.
func (c *Client) GetFlow(ctx context.Context, id uuid.UUID) (*Flow, error) {
	f, err := c.store.GetFlow(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get flow %s: %w", id, err)
	}
	return f, nil
}

// ListFlows returns one page of flows matching p, newest first, without their steps,
// and the cursor of the next page ("" after the last page).
func (c *Client) ListFlows(ctx context.Context, p FlowListParams) (flows []*Flow, nextCursor string, err error) {
	flows, nextCursor, err = c.store.ListFlows(ctx, p)
	if err != nil {
		return nil, "", fmt.Errorf("list flows: %w", err)
	}
	return flows, nextCursor, nil
}

// CancelFlow cancels a RUNNING flow: waiting steps become CANCELED, its waiting tasks
// CANCELED, its running tasks get a cancel request. A CANCELED flow is returned
// unchanged; a SUCCEEDED or FAILED one returns an error wrapping ErrIllegalTransition.
func (c *Client) CancelFlow(ctx context.Context, id uuid.UUID) (*Flow, error) {
	f, err := c.store.CancelFlow(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("cancel flow %s: %w", id, err)
	}
	return f, nil
}

// ReplayFlow makes a FAILED or CANCELED flow RUNNING again: its failed and canceled
// steps' tasks are replayed, and steps that never started get their tasks when their
// dependencies succeed. ErrIllegalTransition for a RUNNING or SUCCEEDED flow;
// ErrConflict while one of its tasks still runs (a cancel its worker has not answered).
func (c *Client) ReplayFlow(ctx context.Context, id uuid.UUID) (*Flow, error) {
	f, err := c.store.ReplayFlow(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("replay flow %s: %w", id, err)
	}
	return f, nil
}
