package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Flow is a flow as the API shows it (docs/api.md, "Objects"). Steps is nil in list
// answers.
type Flow struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	Queue          string     `json:"queue"`
	Status         string     `json:"status"`
	IdempotencyKey string     `json:"idempotency_key"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	CompletedAt    *time.Time `json:"completed_at"`
	Steps          []FlowStep `json:"steps"`

	raw json.RawMessage
}

// FlowStep is one step of a Flow.
type FlowStep struct {
	Name      string          `json:"name"`
	Kind      string          `json:"kind"`
	Queue     string          `json:"queue"`
	Status    string          `json:"status"`
	DependsOn []string        `json:"depends_on"`
	ForEach   string          `json:"for_each"`
	TaskIDs   []string        `json:"task_ids"`
	Output    json.RawMessage `json:"output"`
	Error     string          `json:"error"`
}

// UnmarshalJSON decodes a flow and keeps its exact JSON (see Raw).
func (f *Flow) UnmarshalJSON(b []byte) error {
	type plain Flow
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = Flow(p)
	f.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Raw is the flow's JSON exactly as the server sent it.
func (f *Flow) Raw() json.RawMessage { return f.raw }

// Ended reports whether the flow is SUCCEEDED, FAILED or CANCELED.
func (f *Flow) Ended() bool { return f.Status != "RUNNING" }

// ListFlowsParams filters and pages GET /api/flows; zero values mean no filter and the
// server's default limit.
type ListFlowsParams struct {
	Statuses []string
	Name     string
	Limit    int
	Cursor   string
}

// FlowPage is one page of flows, newest first, without their steps. NextCursor is ""
// on the last page.
type FlowPage struct {
	Flows      []Flow `json:"flows"`
	NextCursor string `json:"next_cursor"`
}

// StartFlow creates a flow from body, the create request as JSON (DESIGN.md section 10;
// sent as is, so that the CLI passes a file through without losing fields it does not
// know). created is false when the idempotency key named an existing flow (HTTP 200).
func (c *Client) StartFlow(ctx context.Context, body json.RawMessage) (flow *Flow, created bool, err error) {
	var f Flow
	status, err := c.do(ctx, http.MethodPost, "/api/flows", nil, body, &f)
	if err != nil {
		return nil, false, err
	}
	return &f, status == http.StatusCreated, nil
}

// GetFlow returns a flow with its steps.
func (c *Client) GetFlow(ctx context.Context, id string) (*Flow, error) {
	return c.flowCall(ctx, http.MethodGet, "/api/flows/"+pathID(id))
}

// ListFlows returns one page of flows, newest first.
func (c *Client) ListFlows(ctx context.Context, p ListFlowsParams) (*FlowPage, error) {
	q := url.Values{}
	if len(p.Statuses) > 0 {
		q.Set("status", strings.Join(p.Statuses, ","))
	}
	setNonEmpty(q, "name", p.Name)
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	setNonEmpty(q, "cursor", p.Cursor)
	var page FlowPage
	if _, err := c.do(ctx, http.MethodGet, "/api/flows", q, nil, &page); err != nil {
		return nil, err
	}
	if page.Flows == nil {
		page.Flows = []Flow{}
	}
	return &page, nil
}

// CancelFlow cancels a RUNNING flow.
func (c *Client) CancelFlow(ctx context.Context, id string) (*Flow, error) {
	return c.flowCall(ctx, http.MethodPost, "/api/flows/"+pathID(id)+"/cancel")
}

// ReplayFlow makes a FAILED or CANCELED flow RUNNING again.
func (c *Client) ReplayFlow(ctx context.Context, id string) (*Flow, error) {
	return c.flowCall(ctx, http.MethodPost, "/api/flows/"+pathID(id)+"/replay")
}

func (c *Client) flowCall(ctx context.Context, method, path string) (*Flow, error) {
	var f Flow
	if _, err := c.do(ctx, method, path, nil, nil, &f); err != nil {
		return nil, err
	}
	return &f, nil
}
