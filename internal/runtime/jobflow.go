package runtime

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// The flow side of a Job (DESIGN.md section 10): a step's task carries its flow, its
// step's name, its inputs (each dependency's output by step name) and, for a for_each
// step, the element it runs for. These helpers read them without the handler knowing
// the field layout of store.Task.

// ErrNotInFlow is returned by the step helpers of a Job whose task is no flow step (or,
// for Item, no for_each element).
var ErrNotInFlow = errors.New("rota: the task is not a flow step")

// FlowID is the flow the task's step belongs to; uuid.Nil for a plain task.
func (j *Job) FlowID() uuid.UUID { return j.Task.FlowID }

// Step is the name of the flow step the task runs; "" for a plain task.
func (j *Job) Step() string { return j.Task.Step }

// Inputs decodes the step's inputs into v: a JSON object with each dependency's output
// under its step name (a struct with json tags, or a map[string]json.RawMessage). A step
// without dependencies has {}. ErrNotInFlow for a plain task.
func (j *Job) Inputs(v any) error {
	if j.Task.FlowID == uuid.Nil {
		return ErrNotInFlow
	}
	raw := j.Task.Inputs
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode the inputs of step %q: %w", j.Task.Step, err)
	}
	return nil
}

// Input decodes the output of one dependency, the step named dep, into v. An error
// when dep is not one of the step's dependencies, or for a plain task (ErrNotInFlow).
func (j *Job) Input(dep string, v any) error {
	var inputs map[string]json.RawMessage
	if err := j.Inputs(&inputs); err != nil {
		return err
	}
	raw, ok := inputs[dep]
	if !ok {
		return fmt.Errorf("step %q has no input %q (its dependencies are the keys of its inputs)", j.Task.Step, dep)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode input %q of step %q: %w", dep, j.Task.Step, err)
	}
	return nil
}

// Item decodes the element a for_each step's task runs for into v (an element may be
// JSON null). ErrNotInFlow for a task that is no for_each element.
func (j *Job) Item(v any) error {
	if j.Task.Index == nil {
		return ErrNotInFlow
	}
	raw := j.Task.Item
	if len(raw) == 0 {
		raw = json.RawMessage(`null`)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode the item of step %q: %w", j.Task.Step, err)
	}
	return nil
}

// Index is the 0-based position of the element a for_each step's task runs for; ok is
// false for any other task.
func (j *Job) Index() (index int, ok bool) {
	if j.Task.Index == nil {
		return 0, false
	}
	return *j.Task.Index, true
}
