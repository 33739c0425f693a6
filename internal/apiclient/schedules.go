package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Schedule is a schedule as the API shows it (docs/api.md, "Objects").
type Schedule struct {
	Name     string       `json:"name"`
	Kind     string       `json:"kind"`
	CronSpec string       `json:"cron_spec"`
	Timezone string       `json:"timezone"`
	Task     ScheduleTask `json:"task"` // zero for kind flow (the API sends null)
	// Flow is a kind flow schedule's flow (POST /api/flows's body without
	// idempotency_key), as the server sent it; nil for kind task.
	Flow           json.RawMessage `json:"flow,omitempty"`
	Enabled        bool            `json:"enabled"`
	CatchUp        string          `json:"catch_up"`
	Overlap        string          `json:"overlap"`
	NextRunAt      time.Time       `json:"next_run_at"`
	LastRunAt      *time.Time      `json:"last_run_at"`
	LastEnqueuedAt *time.Time      `json:"last_enqueued_at"`
	CurrentRunID   *string         `json:"current_run_id"`
	WaitingRunID   *string         `json:"waiting_run_id"`
	SkippedTicks   int64           `json:"skipped_ticks"`
	LastSkippedAt  *time.Time      `json:"last_skipped_at"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`

	raw json.RawMessage
}

// UnmarshalJSON decodes a schedule and keeps its exact JSON (see Raw).
func (s *Schedule) UnmarshalJSON(b []byte) error {
	type plain Schedule
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Schedule(p)
	if string(s.Flow) == "null" { // a kind task schedule
		s.Flow = nil
	}
	s.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Raw is the schedule's JSON exactly as the server sent it.
func (s *Schedule) Raw() json.RawMessage { return s.raw }

// ScheduleTask is the task template every run of a schedule enqueues. In requests, zero
// values are left out so that the server applies its defaults (queue "default",
// payload {}, max attempts 25).
type ScheduleTask struct {
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
}

// CreateSchedule is the body of POST /api/schedules. Empty Timezone means UTC, nil
// Enabled true, empty CatchUp "one", empty Overlap "allow".
//
// A schedule of kind flow sets Flow (the body of POST /api/flows without
// idempotency_key) and leaves Task zero: it is then sent without "task", with "kind":
// "flow".
type CreateSchedule struct {
	Name     string          `json:"name"`
	CronSpec string          `json:"cron_spec"`
	Timezone string          `json:"timezone,omitempty"`
	Task     ScheduleTask    `json:"task"`
	Flow     json.RawMessage `json:"flow,omitempty"`
	Enabled  *bool           `json:"enabled,omitempty"`
	CatchUp  string          `json:"catch_up,omitempty"`
	Overlap  string          `json:"overlap,omitempty"`
}

// MarshalJSON sends a flow schedule as kind flow without a task.
func (c CreateSchedule) MarshalJSON() ([]byte, error) {
	type plain CreateSchedule
	if c.Flow == nil {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
		Task *ScheduleTask `json:"task,omitempty"` // shadows plain's: left out
	}{Kind: "flow", plain: plain(c)})
}

// UpdateSchedule is the body of PATCH /api/schedules/{name}: nil fields stay as they
// are. Task replaces the whole template.
type UpdateSchedule struct {
	CronSpec *string         `json:"cron_spec,omitempty"`
	Timezone *string         `json:"timezone,omitempty"`
	Task     *ScheduleTask   `json:"task,omitempty"`
	Flow     json.RawMessage `json:"flow,omitempty"` // replaces a kind flow schedule's flow
	Enabled  *bool           `json:"enabled,omitempty"`
	CatchUp  *string         `json:"catch_up,omitempty"`
	Overlap  *string         `json:"overlap,omitempty"`
}

// ListScheduleRunsParams pages GET /api/schedules/{name}/runs. Limit 0 = the server's
// default (50).
type ListScheduleRunsParams struct {
	Limit  int
	Cursor string
}

// ListSchedules returns every schedule, ordered by name.
func (c *Client) ListSchedules(ctx context.Context) ([]Schedule, error) {
	var out struct {
		Schedules []Schedule `json:"schedules"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/api/schedules", nil, nil, &out); err != nil {
		return nil, err
	}
	if out.Schedules == nil {
		out.Schedules = []Schedule{}
	}
	return out.Schedules, nil
}

// CreateSchedule creates a schedule; a name that exists is an *Error with status 409.
func (c *Client) CreateSchedule(ctx context.Context, req CreateSchedule) (*Schedule, error) {
	return c.scheduleCall(ctx, http.MethodPost, "/api/schedules", req)
}

// GetSchedule returns one schedule.
func (c *Client) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	return c.scheduleCall(ctx, http.MethodGet, schedulePath(name, ""), nil)
}

// UpdateSchedule changes the fields of req that are set.
func (c *Client) UpdateSchedule(ctx context.Context, name string, req UpdateSchedule) (*Schedule, error) {
	return c.scheduleCall(ctx, http.MethodPatch, schedulePath(name, ""), req)
}

// DeleteSchedule deletes a schedule; the runs it enqueued stay.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	_, err := c.do(ctx, http.MethodDelete, schedulePath(name, ""), nil, nil, nil)
	return err
}

// PauseSchedule stops a schedule from firing.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*Schedule, error) {
	return c.scheduleCall(ctx, http.MethodPost, schedulePath(name, "pause"), nil)
}

// ResumeSchedule lets a paused schedule fire again, from the first tick after now.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*Schedule, error) {
	return c.scheduleCall(ctx, http.MethodPost, schedulePath(name, "resume"), nil)
}

// RescheduleSchedule sets the schedule's next fire time.
func (c *Client) RescheduleSchedule(ctx context.Context, name string, nextRunAt time.Time) (*Schedule, error) {
	body := map[string]string{"next_run_at": nextRunAt.UTC().Format(time.RFC3339Nano)}
	return c.scheduleCall(ctx, http.MethodPost, schedulePath(name, "reschedule"), body)
}

// TriggerSchedule enqueues one run now, without moving the next fire time, and returns
// the task.
func (c *Client) TriggerSchedule(ctx context.Context, name string) (*Task, error) {
	var t Task
	if _, err := c.do(ctx, http.MethodPost, schedulePath(name, "trigger"), nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TriggerScheduleFlow starts one flow of a kind flow schedule now, without moving the
// next fire time, and returns the flow's JSON as the server sent it (DESIGN.md section
// 10's flow: id, name, queue, status, created_at, completed_at, steps).
func (c *Client) TriggerScheduleFlow(ctx context.Context, name string) (json.RawMessage, error) {
	var f json.RawMessage
	if _, err := c.do(ctx, http.MethodPost, schedulePath(name, "trigger"), nil, nil, &f); err != nil {
		return nil, err
	}
	return f, nil
}

// ScheduleRunsPage is one page of a schedule's runs and, while the schedule exists, the
// ticks that got no run (catch-up or overlap); both nil for a deleted schedule.
type ScheduleRunsPage struct {
	TaskPage
	SkippedTicks  *int64     `json:"skipped_ticks"`
	LastSkippedAt *time.Time `json:"last_skipped_at"`
}

// ListScheduleRuns returns one page of the tasks a schedule created, newest first.
func (c *Client) ListScheduleRuns(ctx context.Context, name string, p ListScheduleRunsParams) (*ScheduleRunsPage, error) {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	setNonEmpty(q, "cursor", p.Cursor)
	var page ScheduleRunsPage
	if _, err := c.do(ctx, http.MethodGet, schedulePath(name, "runs"), q, nil, &page); err != nil {
		return nil, err
	}
	if page.Tasks == nil {
		page.Tasks = []Task{}
	}
	return &page, nil
}

func (c *Client) scheduleCall(ctx context.Context, method, path string, body any) (*Schedule, error) {
	var s Schedule
	if _, err := c.do(ctx, method, path, nil, body, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// schedulePath is /api/schedules/{name}[/action], the name escaped as one path segment.
func schedulePath(name, action string) string {
	p := "/api/schedules/" + pathID(name)
	if action != "" {
		p += "/" + action
	}
	return p
}
