package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// A schedule is a row of rota.schedules: a cron spec, a time zone and a task template.
// The database decides when it fires (rota.next_cron_tick in PL/pgSQL); any server claims
// due schedules with FOR UPDATE SKIP LOCKED and, in the same transaction, inserts the run
// (idempotency key schedule:<name>:<unix seconds of the tick>) and advances next_run_at.
// No leader and no clock agreement between servers: only the database's now() counts.

// CatchUp is what a claim does about ticks missed while nothing claimed the schedule.
type CatchUp string

const (
	CatchUpSkip CatchUp = "skip" // no run for missed ticks; the next run is the next future tick
	CatchUpOne  CatchUp = "one"  // one run (for the latest missed tick) for all of them; the default
	CatchUpAll  CatchUp = "all"  // one run per missed tick, at most MaxCatchUpRuns per claim
)

// MaxCatchUpRuns bounds the runs one claim of a CatchUpAll schedule inserts; the rest are
// inserted by the following claims (next_run_at stays in the past until caught up).
const MaxCatchUpRuns = 100

// Schedule kinds: "task" enqueues one task per tick; "flow" is reserved for later.
const (
	ScheduleKindTask = "task"
	ScheduleKindFlow = "flow"
)

// TaskTemplate is what each run of a schedule enqueues.
type TaskTemplate struct {
	Kind        string
	Queue       string          // "" = "default"
	Payload     json.RawMessage // nil = {}
	MaxAttempts int             // 0 = DefaultMaxAttempts
}

// Schedule is one row of rota.schedules.
type Schedule struct {
	Name           string
	Kind           string // ScheduleKindTask
	CronSpec       string
	Timezone       string // IANA name, e.g. "Europe/Berlin"; "UTC" by default
	Task           TaskTemplate
	Enabled        bool
	CatchUp        CatchUp
	NextRunAt      time.Time  // the next tick to fire (in the past while due)
	LastRunAt      *time.Time // the tick of the last run enqueued by a claim
	LastEnqueuedAt *time.Time // when (database time) that run was enqueued
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// ScheduleParams creates a schedule. NextRunAt is computed: the first tick after now.
type ScheduleParams struct {
	Name     string
	Kind     string // "" = "task"
	CronSpec string
	Timezone string // "" = "UTC"
	Task     TaskTemplate
	Enabled  *bool   // nil = true
	CatchUp  CatchUp // "" = "one"
}

// ScheduleUpdate changes some fields of a schedule; nil fields stay. A new CronSpec or
// Timezone recomputes NextRunAt from now.
type ScheduleUpdate struct {
	CronSpec *string
	Timezone *string
	Task     *TaskTemplate
	Enabled  *bool
	CatchUp  *CatchUp
}

// ClaimSchedulesParams asks for up to Limit due, enabled schedules.
type ClaimSchedulesParams struct {
	Limit int // >= 1
}

// ScheduleClaim reports one claimed schedule: the runs it enqueued (tasks, in tick
// order; a tick whose run already existed is not repeated) and the ticks catch-up skipped.
type ScheduleClaim struct {
	Name         string
	Runs         []*Task
	SkippedTicks int
	NextRunAt    time.Time
}

// ScheduleRunsParams pages the tasks a schedule created, newest first.
type ScheduleRunsParams struct {
	Name   string
	Limit  int // 0 = DefaultListLimit
	Cursor string
}

// ScheduleStore is the schedule half of the store. Errors: ErrInvalid for bad input
// (an invalid cron spec or time zone names the field), ErrNotFound for an unknown name,
// ErrConflict for a name that exists.
type ScheduleStore interface {
	CreateSchedule(ctx context.Context, params ScheduleParams) (*Schedule, error)
	GetSchedule(ctx context.Context, name string) (*Schedule, error)
	// ListSchedules returns every schedule ordered by name.
	ListSchedules(ctx context.Context) ([]*Schedule, error)
	UpdateSchedule(ctx context.Context, name string, update ScheduleUpdate) (*Schedule, error)
	DeleteSchedule(ctx context.Context, name string) error
	// PauseSchedule disables it; ResumeSchedule enables it with NextRunAt = the first
	// tick after now (ticks missed while paused never run).
	PauseSchedule(ctx context.Context, name string) (*Schedule, error)
	ResumeSchedule(ctx context.Context, name string) (*Schedule, error)
	// RescheduleSchedule sets NextRunAt.
	RescheduleSchedule(ctx context.Context, name string, nextRunAt time.Time) (*Schedule, error)
	// TriggerSchedule enqueues one run now without moving NextRunAt.
	TriggerSchedule(ctx context.Context, name string) (*Task, error)
	// ClaimDueSchedules claims due, enabled schedules (SKIP LOCKED) and, in the same
	// transaction per claim, enqueues their runs per the catch-up policy and advances
	// NextRunAt. Concurrent callers never claim the same schedule twice, and no tick is
	// ever enqueued twice (the idempotency key guarantees it even across restores).
	ClaimDueSchedules(ctx context.Context, params ClaimSchedulesParams) ([]ScheduleClaim, error)
	// ListScheduleRuns returns the tasks a schedule created (by claims or triggers).
	ListScheduleRuns(ctx context.Context, params ScheduleRunsParams) (tasks []*Task, nextCursor string, err error)
}

// Runs are linked to their schedule by their idempotency key, "schedule:<name>:...":
// ListScheduleRuns finds them by that prefix, so schedule names may not contain ':'.

// ScheduleRunKey is the idempotency key of a schedule's run for one tick.
func ScheduleRunKey(name string, tick time.Time) string {
	return "schedule:" + name + ":" + strconv.FormatInt(tick.Unix(), 10)
}

// ScheduleTriggerKey is the idempotency key of a manual trigger at (database) time now;
// it never collides with a tick's key.
func ScheduleTriggerKey(name string, now time.Time) string {
	return "schedule:" + name + ":trigger:" + strconv.FormatInt(now.UnixNano(), 10)
}

// ScheduleRunKeyPrefix is the prefix every run key of the schedule shares.
func ScheduleRunKeyPrefix(name string) string { return "schedule:" + name + ":" }

// scheduleNamePattern: names appear in URLs and idempotency keys (no ':').
var scheduleNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ValidateScheduleName checks a schedule name.
func ValidateScheduleName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: name is required", ErrInvalid)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: name is longer than %d characters", ErrInvalid, MaxNameLength)
	case !scheduleNamePattern.MatchString(name):
		return fmt.Errorf("%w: name %q must start with a letter or digit and contain only letters, digits, '_', '.' or '-'", ErrInvalid, name)
	}
	return nil
}
