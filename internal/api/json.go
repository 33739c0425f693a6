package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// The answer shapes. Field names are fixed by DESIGN.md section 7 (the task table's
// column names): fields may be added, none renamed. Times are UTC; absent ones are null.

type taskJSON struct {
	ID                  uuid.UUID       `json:"id"`
	Queue               string          `json:"queue"`
	Kind                string          `json:"kind"`
	Payload             json.RawMessage `json:"payload"`
	Status              store.Status    `json:"status"`
	Priority            int             `json:"priority"`
	ScheduledFor        time.Time       `json:"scheduled_for"`
	AttemptCount        int             `json:"attempt_count"`
	MaxAttempts         int             `json:"max_attempts"`
	IdempotencyKey      *string         `json:"idempotency_key"`
	GroupKey            *string         `json:"group_key"`
	TimeoutSeconds      int             `json:"timeout_seconds"`
	WorkerID            *string         `json:"worker_id"`
	LeaseExpiresAt      *time.Time      `json:"lease_expires_at"`
	CancelRequestedAt   *time.Time      `json:"cancel_requested_at"`
	EnqueuedAt          *time.Time      `json:"enqueued_at"`
	ProcessingStartedAt *time.Time      `json:"processing_started_at"`
	CompletedAt         *time.Time      `json:"completed_at"`
	LastError           *string         `json:"last_error"`
	// Output is what the task's successful attempt returned (DESIGN.md section 10,
	// "Results"); null when none.
	Output    json.RawMessage `json:"output"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// The flow step the task runs (DESIGN.md section 10), absent for a plain task:
	// FlowID and Step name it, Inputs maps each dependency's step name to its output,
	// Item and Index are the element a for_each task runs for (absent otherwise; an
	// element may be null, which is then sent as null).
	FlowID *uuid.UUID       `json:"flow_id,omitempty"`
	Step   string           `json:"step,omitempty"`
	Inputs json.RawMessage  `json:"inputs,omitempty"`
	Item   *json.RawMessage `json:"item,omitempty"`
	Index  *int             `json:"index,omitempty"`
	// LeaseToken is set only in claim answers: it is the worker's proof of ownership,
	// and anyone who can read tasks must not be able to complete them.
	LeaseToken *uuid.UUID `json:"lease_token,omitempty"`
	// Warnings is set only in create answers (DESIGN.md section 12): the task was
	// created, but no live worker may run it yet.
	Warnings []string `json:"warnings,omitempty"`
	// Traceparent and Tracestate, in claim answers only, are the W3C trace context of
	// the call that created the task (absent when it was not traced): a worker's
	// attempt span continues that trace.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

func taskOut(t *store.Task) taskJSON {
	payload := t.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	return taskJSON{
		ID:                  t.ID,
		Queue:               t.Queue,
		Kind:                t.Kind,
		Payload:             payload,
		Status:              t.Status,
		Priority:            t.Priority,
		ScheduledFor:        t.ScheduledFor.UTC(),
		AttemptCount:        t.AttemptCount,
		MaxAttempts:         t.MaxAttempts,
		IdempotencyKey:      nullString(t.IdempotencyKey),
		GroupKey:            nullString(t.GroupKey),
		TimeoutSeconds:      t.TimeoutSeconds,
		WorkerID:            nullString(t.WorkerID),
		LeaseExpiresAt:      utcPtr(t.LeaseExpiresAt),
		CancelRequestedAt:   utcPtr(t.CancelRequestedAt),
		EnqueuedAt:          utcPtr(t.EnqueuedAt),
		ProcessingStartedAt: utcPtr(t.ProcessingStartedAt),
		CompletedAt:         utcPtr(t.CompletedAt),
		LastError:           nullString(t.LastError),
		Output:              t.Output,
		CreatedAt:           t.CreatedAt.UTC(),
		UpdatedAt:           t.UpdatedAt.UTC(),
	}
}

// withStep adds the flow step fields of a step task. Only GET /api/tasks/{id} and claim
// answers carry them: those are the reads that return them on every store (lists and
// outcomes leave the inputs, which may be large, unread in PostgreSQL), so an answer's
// shape does not depend on the store behind the server.
func (out taskJSON) withStep(t *store.Task) taskJSON {
	if t.FlowID == uuid.Nil {
		return out
	}
	id := t.FlowID
	out.FlowID, out.Step, out.Inputs, out.Index = &id, t.Step, t.Inputs, t.Index
	if len(out.Inputs) == 0 {
		out.Inputs = json.RawMessage(`{}`)
	}
	if t.Index != nil {
		item := t.Item
		if len(item) == 0 {
			item = json.RawMessage(`null`)
		}
		out.Item = &item
	}
	return out
}

func tasksOut(ts []*store.Task) []taskJSON {
	out := make([]taskJSON, len(ts)) // never nil: an empty list is [], not null
	for i, t := range ts {
		out[i] = taskOut(t)
	}
	return out
}

// claimedTaskOut is taskOut plus a step task's flow fields and the lease token.
func claimedTaskOut(t *store.Task) taskJSON {
	out := taskOut(t).withStep(t)
	token := t.LeaseToken
	out.LeaseToken = &token
	out.Traceparent, out.Tracestate = t.TraceContext["traceparent"], t.TraceContext["tracestate"]
	return out
}

type taskListJSON struct {
	Tasks      []taskJSON `json:"tasks"`
	NextCursor string     `json:"next_cursor"`
}

type tasksJSON struct {
	Tasks []taskJSON `json:"tasks"`
	// Warnings: the batch create's one list for the whole batch (see taskJSON).
	Warnings []string `json:"warnings,omitempty"`
}

type attemptJSON struct {
	ID         int64      `json:"id"`
	TaskID     uuid.UUID  `json:"task_id"`
	Attempt    int        `json:"attempt"`
	WorkerID   *string    `json:"worker_id"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Outcome    *string    `json:"outcome"`
	Error      *string    `json:"error"`
}

type attemptsJSON struct {
	Attempts []attemptJSON `json:"attempts"`
}

func attemptsOut(as []store.Attempt) attemptsJSON {
	out := attemptsJSON{Attempts: make([]attemptJSON, len(as))}
	for i, a := range as {
		out.Attempts[i] = attemptJSON{
			ID:         a.ID,
			TaskID:     a.TaskID,
			Attempt:    a.Attempt,
			WorkerID:   nullString(a.WorkerID),
			StartedAt:  a.StartedAt.UTC(),
			FinishedAt: utcPtr(a.FinishedAt),
			Outcome:    nullString(string(a.Outcome)),
			Error:      nullString(a.Error),
		}
	}
	return out
}

type deadLetterJSON struct {
	ID           int64        `json:"id"`
	TaskID       uuid.UUID    `json:"task_id"`
	Kind         string       `json:"kind"`
	Queue        string       `json:"queue"`
	WorkerID     *string      `json:"worker_id"`
	AttemptCount int          `json:"attempt_count"`
	MaxAttempts  int          `json:"max_attempts"`
	Error        *string      `json:"error"`
	Reason       store.Status `json:"reason"`
	CreatedAt    time.Time    `json:"created_at"`
	ReplayedAt   *time.Time   `json:"replayed_at"`
}

type deadLetterListJSON struct {
	DeadLetters []deadLetterJSON `json:"dead_letters"`
	NextCursor  string           `json:"next_cursor"`
}

func deadLettersOut(ds []store.DeadLetter, next string) deadLetterListJSON {
	out := deadLetterListJSON{DeadLetters: make([]deadLetterJSON, len(ds)), NextCursor: next}
	for i, d := range ds {
		out.DeadLetters[i] = deadLetterJSON{
			ID:           d.ID,
			TaskID:       d.TaskID,
			Kind:         d.Kind,
			Queue:        d.Queue,
			WorkerID:     nullString(d.WorkerID),
			AttemptCount: d.AttemptCount,
			MaxAttempts:  d.MaxAttempts,
			Error:        nullString(d.Error),
			Reason:       d.Reason,
			CreatedAt:    d.CreatedAt.UTC(),
			ReplayedAt:   utcPtr(d.ReplayedAt),
		}
	}
	return out
}

type replayedJSON struct {
	Replayed int        `json:"replayed"`
	Tasks    []taskJSON `json:"tasks"`
}

type queueStatsJSON struct {
	Queue         string                 `json:"queue"`
	Counts        map[store.Status]int64 `json:"counts"`
	OldestDueAt   *time.Time             `json:"oldest_due_at"`
	ExpiredLeases int64                  `json:"expired_leases"`
}

type statsJSON struct {
	Queues []queueStatsJSON       `json:"queues"`
	Totals map[store.Status]int64 `json:"totals"`
}

// statsOut lists every status in every counts object, zero or not, so that clients
// need no special case for a status that has no tasks yet.
func statsOut(qs []store.QueueStats) statsJSON {
	out := statsJSON{Queues: make([]queueStatsJSON, len(qs)), Totals: zeroCounts()}
	for i, q := range qs {
		counts := zeroCounts()
		for st, n := range q.Counts {
			counts[st] += n
			out.Totals[st] += n
		}
		out.Queues[i] = queueStatsJSON{
			Queue:         q.Queue,
			Counts:        counts,
			OldestDueAt:   utcPtr(q.OldestDueAt),
			ExpiredLeases: q.ExpiredLeases,
		}
	}
	return out
}

func zeroCounts() map[store.Status]int64 {
	m := make(map[store.Status]int64, len(store.AllStatuses))
	for _, st := range store.AllStatuses {
		m[st] = 0
	}
	return m
}

type statusJSON struct {
	Status string `json:"status"`
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
