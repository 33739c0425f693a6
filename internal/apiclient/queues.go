package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// RateLimit is at most Limit claims in any PerSeconds-second window, sliding.
type RateLimit struct {
	Limit      int `json:"limit"`
	PerSeconds int `json:"per_seconds"`
}

// Queue is a queue as the API shows it (docs/api.md, "Objects"): its settings (nil =
// no limit), counts and live workers.
type Queue struct {
	Name                 string           `json:"name"`
	Paused               bool             `json:"paused"`
	Concurrency          *int             `json:"concurrency"`
	Rate                 *RateLimit       `json:"rate"`
	GroupConcurrency     *int             `json:"group_concurrency"`
	GroupRate            *RateLimit       `json:"group_rate"`
	Counts               map[string]int64 `json:"counts"`
	OldestPendingSeconds float64          `json:"oldest_pending_seconds"`
	Workers              int              `json:"workers"`
	UpdatedAt            *time.Time       `json:"updated_at"`

	raw json.RawMessage
}

// UnmarshalJSON decodes a queue and keeps its exact JSON (see Raw).
func (q *Queue) UnmarshalJSON(b []byte) error {
	type plain Queue
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*q = Queue(p)
	q.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Raw is the queue's JSON exactly as the server sent it.
func (q *Queue) Raw() json.RawMessage { return q.raw }

// Limit is one limit of an UpdateQueue: nil leaves the setting as it is, NoLimit
// removes it, Set(v) sets it.
type Limit[T any] struct {
	To *T // nil = no limit
}

// Set returns a Limit that sets v.
func Set[T any](v T) *Limit[T] { return &Limit[T]{To: &v} }

// NoLimit returns a Limit that removes the setting's limit.
func NoLimit[T any]() *Limit[T] { return &Limit[T]{} }

// UpdateQueue is the body of PATCH /api/queues/{queue}: nil fields stay as they are.
type UpdateQueue struct {
	Paused           *bool
	Concurrency      *Limit[int]
	Rate             *Limit[RateLimit]
	GroupConcurrency *Limit[int]
	GroupRate        *Limit[RateLimit]
}

// MarshalJSON writes the merge patch: the fields that change, null for a removed limit.
func (u UpdateQueue) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if u.Paused != nil {
		m["paused"] = *u.Paused
	}
	putLimit(m, "concurrency", u.Concurrency)
	putLimit(m, "rate", u.Rate)
	putLimit(m, "group_concurrency", u.GroupConcurrency)
	putLimit(m, "group_rate", u.GroupRate)
	return json.Marshal(m)
}

func putLimit[T any](m map[string]any, field string, l *Limit[T]) {
	if l != nil {
		m[field] = l.To // a nil *T encodes as null
	}
}

// ListQueues returns every queue that has tasks, settings or live workers, by name.
func (c *Client) ListQueues(ctx context.Context) ([]Queue, error) {
	var out struct {
		Queues []Queue `json:"queues"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/api/queues", nil, nil, &out); err != nil {
		return nil, err
	}
	if out.Queues == nil {
		out.Queues = []Queue{}
	}
	return out.Queues, nil
}

// GetQueue returns one queue (the defaults for one nobody configured).
func (c *Client) GetQueue(ctx context.Context, name string) (*Queue, error) {
	return c.queueCall(ctx, http.MethodGet, queuePath(name, ""), nil)
}

// UpdateQueue changes the settings of req that are set and returns the queue.
func (c *Client) UpdateQueue(ctx context.Context, name string, req UpdateQueue) (*Queue, error) {
	return c.queueCall(ctx, http.MethodPatch, queuePath(name, ""), req)
}

// PauseQueue stops every claim of the queue's tasks until it is resumed.
func (c *Client) PauseQueue(ctx context.Context, name string) (*Queue, error) {
	return c.queueCall(ctx, http.MethodPost, queuePath(name, "pause"), nil)
}

// ResumeQueue lets claims take the queue's tasks again.
func (c *Client) ResumeQueue(ctx context.Context, name string) (*Queue, error) {
	return c.queueCall(ctx, http.MethodPost, queuePath(name, "resume"), nil)
}

func (c *Client) queueCall(ctx context.Context, method, path string, body any) (*Queue, error) {
	var q Queue
	if _, err := c.do(ctx, method, path, nil, body, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// queuePath is /api/queues/{queue}[/action], the name escaped as one path segment.
func queuePath(name, action string) string {
	p := "/api/queues/" + pathID(name)
	if action != "" {
		p += "/" + action
	}
	return p
}
