package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// Flows (store.FlowStore). This mirrors migration 0019: transition calls flowTaskEnded
// whenever a step task ends, as the tasks_flow_advance trigger fires in PostgreSQL, and
// the helpers below are its PL/pgSQL functions (flow_activate, flow_step_done,
// flow_stop, flow_replay). One mutex makes every call one transaction.

// flowEntry is one flow and its steps.
type flowEntry struct {
	flow      store.Flow // Steps unused: see steps
	steps     []*stepEntry
	byName    map[string]*stepEntry
	stepsLeft int // steps not SUCCEEDED yet
}

// stepEntry is a row of rota.flow_steps with its tasks.
type stepEntry struct {
	params    store.StepParams
	state     store.StepState
	depsLeft  int      // dependencies not SUCCEEDED yet
	tasksLeft int      // tasks not SUCCEEDED yet (meaningful once STARTED)
	tasks     []*entry // in element order
	// inputs: its dependencies' outputs by name, set when it starts (rota.flow_steps.inputs).
	// Its tasks' Task.Inputs share this one slice (read-only, cloneTask copies it for a
	// reader): a fan-out does not copy the array it fans out over into every element.
	inputs json.RawMessage
	output json.RawMessage
	err    string
}

// CreateFlow inserts a flow and its first tasks; see store.FlowStore.
func (s *Store) CreateFlow(ctx context.Context, params store.FlowParams) (store.FlowCreateResult, error) {
	if err := ctx.Err(); err != nil {
		return store.FlowCreateResult{}, err
	}
	p := params
	p.Steps = slices.Clone(params.Steps)
	for i := range p.Steps {
		p.Steps[i].Payload = bytes.Clone(p.Steps[i].Payload)
	}
	if err := p.Normalize(); err != nil {
		return store.FlowCreateResult{}, fmt.Errorf("create flow: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createFlow(p)
}

// createFlow is CreateFlow with p normalized and s.mu held (a schedule's claim starts
// its flows under the same lock as its other writes).
func (s *Store) createFlow(p store.FlowParams) (store.FlowCreateResult, error) {
	return s.insertFlow(p, true)
}

// insertFlow is createFlow; with start false the flow is created but not started (every
// step WAITING, no task), as a schedule's held flow (buffer_one), which
// scheduleFlowEnded starts later.
func (s *Store) insertFlow(p store.FlowParams, start bool) (store.FlowCreateResult, error) {
	if p.IdempotencyKey != "" {
		if fe := s.flowKeys[p.IdempotencyKey]; fe != nil {
			return store.FlowCreateResult{Flow: s.flowView(fe), Existing: true}, nil
		}
	}
	if s.flows[p.ID] != nil {
		return store.FlowCreateResult{}, fmt.Errorf("create flow: %w: a flow with id %s exists", store.ErrConflict, p.ID)
	}
	now := s.clock()
	fe := &flowEntry{
		flow: store.Flow{ID: p.ID, Name: p.Name, Queue: p.Queue, Status: store.FlowRunning,
			IdempotencyKey: p.IdempotencyKey, CreatedAt: now, UpdatedAt: now},
		byName:    make(map[string]*stepEntry, len(p.Steps)),
		stepsLeft: len(p.Steps),
	}
	for _, sp := range p.Steps {
		st := &stepEntry{params: sp, state: store.StepStateWaiting, depsLeft: len(sp.DependsOn)}
		fe.steps = append(fe.steps, st)
		fe.byName[sp.Name] = st
	}
	s.flows[p.ID] = fe
	s.flowIDs = insertSorted(s.flowIDs, p.ID)
	if p.IdempotencyKey != "" {
		s.flowKeys[p.IdempotencyKey] = fe
	}
	if start {
		s.startFlow(fe, now)
	}
	return store.FlowCreateResult{Flow: s.flowView(fe)}, nil
}

// startFlow starts the steps of fe without dependencies (rota.flow_start); a flow that
// is not RUNNING starts nothing.
func (s *Store) startFlow(fe *flowEntry, now time.Time) {
	for _, st := range fe.steps {
		if fe.flow.Status != store.FlowRunning {
			break
		}
		if st.state == store.StepStateWaiting && st.depsLeft == 0 {
			s.activateStep(fe, st, now)
		}
	}
}

func insertSorted(ids []uuid.UUID, id uuid.UUID) []uuid.UUID {
	i, _ := slices.BinarySearchFunc(ids, id, compareIDs)
	return slices.Insert(ids, i, id)
}

// activateStep starts a step whose dependencies all succeeded (rota.flow_activate).
func (s *Store) activateStep(fe *flowEntry, st *stepEntry, now time.Time) {
	inputs := map[string]json.RawMessage{}
	for _, d := range st.params.DependsOn {
		inputs[d] = jsonOrNull(fe.byName[d].output)
	}
	st.inputs, _ = json.Marshal(inputs) // RawMessages of stored JSON: cannot fail
	sp := st.params
	newTask := func(item json.RawMessage, index *int) {
		e := &entry{task: store.Task{
			ID: store.NewID(), Queue: sp.Queue, Kind: sp.Kind, Payload: bytes.Clone(sp.Payload),
			Status: store.StatusPending, Priority: sp.Priority, ScheduledFor: now,
			MaxAttempts: sp.MaxAttempts, TimeoutSeconds: sp.TimeoutSeconds, GroupKey: sp.GroupKey,
			FlowID: fe.flow.ID, Step: sp.Name, Inputs: st.inputs, Item: item, Index: index,
			CreatedAt: now, UpdatedAt: now,
		}}
		s.insert(e, now)
		st.tasks = append(st.tasks, e)
	}
	if sp.ForEach == "" {
		st.state, st.tasksLeft = store.StepStateStarted, 1
		newTask(nil, nil)
		s.notify(map[string]bool{sp.Queue: true})
		return
	}
	var items []json.RawMessage
	if err := json.Unmarshal(inputs[sp.ForEach], &items); err != nil || items == nil {
		st.state = store.StepStateFailed
		st.err = fmt.Sprintf("for_each: the output of step %s is %s, not an array", sp.ForEach, jsonType(inputs[sp.ForEach]))
		s.stopFlow(fe, store.FlowFailed, now)
		return
	}
	st.state, st.tasksLeft = store.StepStateStarted, len(items)
	if len(items) == 0 {
		s.stepDone(fe, st, now)
		return
	}
	for i, item := range items {
		newTask(compactJSON(item), &i)
	}
	s.notify(map[string]bool{sp.Queue: true})
}

// stepDone: all of st's tasks succeeded (rota.flow_step_done).
func (s *Store) stepDone(fe *flowEntry, st *stepEntry, now time.Time) {
	st.state, st.err = store.StepStateSucceeded, ""
	if st.params.ForEach == "" {
		st.output = bytes.Clone(st.tasks[0].task.Output)
	} else {
		outs := make([]json.RawMessage, len(st.tasks))
		for i, e := range st.tasks {
			outs[i] = jsonOrNull(e.task.Output)
		}
		st.output, _ = json.Marshal(outs)
	}
	fe.stepsLeft--
	if fe.stepsLeft == 0 { // a flow's updated_at changes with its status only (as in PostgreSQL)
		fe.flow.Status, fe.flow.UpdatedAt = store.FlowSucceeded, now
		done := now
		fe.flow.CompletedAt = &done
		s.scheduleFlowEnded(fe, now)
	}
	var ready []*stepEntry
	for _, next := range fe.steps {
		if next.state == store.StepStateWaiting && slices.Contains(next.params.DependsOn, st.params.Name) {
			next.depsLeft--
			if next.depsLeft == 0 {
				ready = append(ready, next)
			}
		}
	}
	for _, next := range ready {
		if fe.flow.Status != store.FlowRunning {
			return
		}
		s.activateStep(fe, next, now)
	}
}

// stopFlow ends a RUNNING flow as FAILED or CANCELED (rota.flow_stop): waiting steps
// become CANCELED, waiting tasks CANCELED, running ones get a cancel request. The tasks
// it cancels do not feed back (flowStopping, as the trigger's depth check).
func (s *Store) stopFlow(fe *flowEntry, to store.FlowStatus, now time.Time) {
	if fe.flow.Status != store.FlowRunning {
		return
	}
	fe.flow.Status, fe.flow.UpdatedAt = to, now
	done := now
	fe.flow.CompletedAt = &done
	if fe.flow.IdempotencyKey != "" && s.flowKeys[fe.flow.IdempotencyKey] == fe {
		delete(s.flowKeys, fe.flow.IdempotencyKey)
	}
	s.scheduleFlowEnded(fe, now) // as the trigger on rota.flows: before the tasks are canceled
	s.flowStopping = true
	defer func() { s.flowStopping = false }()
	for _, st := range fe.steps {
		if st.state == store.StepStateWaiting {
			st.state = store.StepStateCanceled
		}
		for _, e := range st.tasks {
			switch e.task.Status {
			case store.StatusPending, store.StatusEnqueued:
				s.transition(e, store.StatusCanceled, now, func(t *store.Task) {
					at := now
					t.CompletedAt = &at
				})
			case store.StatusProcessing:
				if e.task.CancelRequestedAt == nil {
					at := now
					e.task.CancelRequestedAt = &at
					e.task.UpdatedAt = now
				}
				s.broadcast(store.Notification{Kind: store.CancelRequested, TaskID: e.task.ID})
			}
		}
	}
}

// flowTaskEnded is the tasks_flow_advance trigger: transition calls it when a step task
// moves to SUCCEEDED, DEAD, FAILED or CANCELED.
func (s *Store) flowTaskEnded(e *entry, now time.Time) {
	if s.flowStopping {
		return
	}
	fe := s.flows[e.task.FlowID]
	if fe == nil || fe.flow.Status != store.FlowRunning {
		return
	}
	st := fe.byName[e.task.Step]
	if e.task.Status == store.StatusSucceeded {
		if st.state != store.StepStateStarted {
			return
		}
		st.tasksLeft--
		if st.tasksLeft == 0 {
			s.stepDone(fe, st, now)
		}
		return
	}
	st.err = e.task.LastError
	if st.err == "" {
		st.err = fmt.Sprintf("task %s ended %s", e.task.ID, e.task.Status)
	}
	s.stopFlow(fe, store.FlowFailed, now)
}

// GetFlow returns a flow with its steps; see store.FlowStore.
func (s *Store) GetFlow(ctx context.Context, id uuid.UUID) (*store.Flow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fe := s.flows[id]
	if fe == nil {
		return nil, fmt.Errorf("get flow %s: %w", id, store.ErrFlowNotFound)
	}
	return s.flowView(fe), nil
}

// flowView is a deep copy of a flow with its steps, as GetFlow returns it.
func (s *Store) flowView(fe *flowEntry) *store.Flow {
	f := flowHead(fe)
	f.Steps = make([]store.FlowStep, len(fe.steps))
	for i, st := range fe.steps {
		ids := make([]uuid.UUID, len(st.tasks))
		statuses := make([]store.Status, len(st.tasks))
		for j, e := range st.tasks {
			ids[j], statuses[j] = e.task.ID, e.task.Status
		}
		sp := st.params
		f.Steps[i] = store.FlowStep{
			Name: sp.Name, Kind: sp.Kind, Queue: sp.Queue, DependsOn: append([]string{}, sp.DependsOn...),
			ForEach: sp.ForEach, State: st.state, TaskIDs: ids, TaskStatuses: statuses, Output: bytes.Clone(st.output), Error: st.err,
			Status:  store.StepStatusOf(st.state, sp.ForEach != "", statuses),
			Payload: bytes.Clone(sp.Payload), MaxAttempts: sp.MaxAttempts, Priority: sp.Priority,
			TimeoutSeconds: sp.TimeoutSeconds, GroupKey: sp.GroupKey,
		}
	}
	return f
}

// flowHead is a copy of a flow without its steps, as ListFlows returns it.
func flowHead(fe *flowEntry) *store.Flow {
	f := fe.flow
	f.CompletedAt = cloneTime(fe.flow.CompletedAt)
	f.Steps = nil
	return &f
}

// ListFlows pages through flows newest first; see store.FlowStore.
func (s *Store) ListFlows(ctx context.Context, p store.FlowListParams) ([]*store.Flow, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	limit, err := p.Check()
	if err != nil {
		return nil, "", fmt.Errorf("list flows: %w", err)
	}
	var after uuid.UUID
	if p.Cursor != "" {
		if after, err = store.DecodeTaskCursor(p.Cursor); err != nil {
			return nil, "", fmt.Errorf("list flows: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*store.Flow
	for i := len(s.flowIDs) - 1; i >= 0; i-- {
		id := s.flowIDs[i]
		if p.Cursor != "" && compareIDs(id, after) >= 0 {
			continue
		}
		fe := s.flows[id]
		if p.Name != "" && fe.flow.Name != p.Name {
			continue
		}
		if len(p.Statuses) > 0 && !slices.Contains(p.Statuses, fe.flow.Status) {
			continue
		}
		if len(out) == limit {
			return out, store.EncodeTaskCursor(out[limit-1].ID), nil
		}
		out = append(out, flowHead(fe))
	}
	return out, "", nil
}

// CancelFlow cancels a RUNNING flow; see store.FlowStore.
func (s *Store) CancelFlow(ctx context.Context, id uuid.UUID) (*store.Flow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fe := s.flows[id]
	if fe == nil {
		return nil, fmt.Errorf("cancel flow %s: %w", id, store.ErrFlowNotFound)
	}
	s.stopFlow(fe, store.FlowCanceled, s.clock())
	if fe.flow.Status != store.FlowCanceled {
		return nil, fmt.Errorf("cancel flow %s: %w: the flow is %s", id, store.ErrIllegalTransition, fe.flow.Status)
	}
	return s.flowView(fe), nil
}

// ReplayFlow makes a FAILED or CANCELED flow RUNNING again (rota.flow_replay); see
// store.FlowStore.
func (s *Store) ReplayFlow(ctx context.Context, id uuid.UUID) (*store.Flow, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fe := s.flows[id]
	if fe == nil {
		return nil, fmt.Errorf("replay flow %s: %w", id, store.ErrFlowNotFound)
	}
	if fe.flow.Status != store.FlowFailed && fe.flow.Status != store.FlowCanceled {
		return nil, fmt.Errorf("replay flow %s: %w: the flow is %s", id, store.ErrIllegalTransition, fe.flow.Status)
	}
	if flowRuns(fe) { // as rota.flow_replay: a running task's CANCELED would fail it again
		return nil, fmt.Errorf("replay flow %s: %w: a task of the flow still runs (a cancel request not answered yet); replay once it ended", id, store.ErrConflict)
	}
	if key := fe.flow.IdempotencyKey; key != "" {
		if holder := s.flowKeys[key]; holder != nil && holder != fe {
			return nil, fmt.Errorf("replay flow %s: %w: flow %s now holds idempotency key %q", id, store.ErrConflict, holder.flow.ID, key)
		}
		s.flowKeys[key] = fe
	}
	now := s.clock()
	fe.flow.Status, fe.flow.CompletedAt, fe.flow.UpdatedAt = store.FlowRunning, nil, now
	fe.stepsLeft = 0
	for _, st := range fe.steps {
		if st.state != store.StepStateSucceeded {
			fe.stepsLeft++
		}
	}
	wake := map[string]bool{}
	for _, st := range fe.steps {
		for _, e := range st.tasks {
			if st := e.task.Status; st == store.StatusDead || st == store.StatusFailed || st == store.StatusCanceled {
				s.transition(e, store.StatusPending, now, func(t *store.Task) {
					t.AttemptCount, t.ScheduledFor, t.LastError = 0, now, ""
					t.CompletedAt, t.CancelRequestedAt = nil, nil
				})
				wake[e.task.Queue] = true
			}
		}
	}
	for _, st := range fe.steps {
		switch st.state {
		case store.StepStateStarted:
			st.err, st.tasksLeft = "", 0
			for _, e := range st.tasks {
				if e.task.Status != store.StatusSucceeded {
					st.tasksLeft++
				}
			}
		case store.StepStateFailed, store.StepStateCanceled:
			st.state, st.err, st.depsLeft = store.StepStateWaiting, "", 0
			for _, d := range st.params.DependsOn {
				if fe.byName[d].state != store.StepStateSucceeded {
					st.depsLeft++
				}
			}
		}
	}
	for _, st := range fe.steps {
		if fe.flow.Status != store.FlowRunning {
			break
		}
		switch {
		case st.state == store.StepStateStarted && st.tasksLeft == 0:
			s.stepDone(fe, st, now)
		case st.state == store.StepStateWaiting && st.depsLeft == 0:
			s.activateStep(fe, st, now)
		}
	}
	s.notify(wake)
	return s.flowView(fe), nil
}

// jsonOrNull is b, or JSON null for no output.
func jsonOrNull(b json.RawMessage) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

// jsonType names a JSON value's type as jsonb_typeof does.
func jsonType(b json.RawMessage) string {
	switch c := bytes.TrimSpace(b); {
	case len(c) == 0 || c[0] == 'n':
		return "null"
	case c[0] == '{':
		return "object"
	case c[0] == '[':
		return "array"
	case c[0] == '"':
		return "string"
	case c[0] == 't' || c[0] == 'f':
		return "boolean"
	}
	return "number"
}

// compactJSON is an element of an array as a value of its own.
func compactJSON(b json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return bytes.Clone(b)
	}
	return buf.Bytes()
}
