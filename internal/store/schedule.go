package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
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

// Overlap is what a claim does when a schedule's tick comes while its previous run has
// not finished (DESIGN.md section 11). A run is finished once its task is SUCCEEDED,
// DEAD, FAILED or CANCELED; for a schedule of kind flow, once its flow is not RUNNING
// (scheduleflow.go).
type Overlap string

const (
	OverlapAllow Overlap = "allow" // every tick runs, whatever still runs; the default
	OverlapSkip  Overlap = "skip"  // no new run while the previous one is not finished; the tick is skipped
	// OverlapBufferOne: at most one run waits for the running one. It is inserted held
	// (PENDING, ScheduledFor = HeldRunAt) and made due in the transaction that finishes
	// the running one; ticks that come while one waits are skipped. Kind flow: the held
	// flow is created but not started (every step WAITING, no task) and starts in the
	// transaction that ends the running flow.
	OverlapBufferOne Overlap = "buffer_one"
	// OverlapCancelOther: a new run cancels the previous one as CancelTask does (PENDING
	// or ENQUEUED at once, PROCESSING by a cancel request) and starts at once. Kind flow:
	// the running flow is canceled as CancelFlow does.
	OverlapCancelOther Overlap = "cancel_other"
)

// HeldRunAt is the ScheduledFor of a buffered run while it waits for the running one
// (never due); the run's idempotency key still names its tick.
var HeldRunAt = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// MaxCatchUpRuns bounds the runs one claim of a CatchUpAll schedule inserts; the rest are
// inserted by the following claims (next_run_at stays in the past until caught up).
const MaxCatchUpRuns = 100

// Schedule kinds: "task" enqueues one task per tick; "flow" starts one flow per tick
// (scheduleflow.go).
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
	Name     string
	Kind     string // ScheduleKindTask or ScheduleKindFlow
	CronSpec string
	Timezone string // IANA name, e.g. "Europe/Berlin"; "UTC" by default
	Task     TaskTemplate
	// Flow is what each tick of a kind flow schedule starts (normalized, no ID and no
	// IdempotencyKey); nil for kind task. Such a schedule's Task is a placeholder (kind
	// "flow" on the flow's queue) that nothing enqueues.
	Flow           *FlowParams
	Enabled        bool
	CatchUp        CatchUp
	Overlap        Overlap
	NextRunAt      time.Time  // the next tick to fire (in the past while due)
	LastRunAt      *time.Time // the tick of the last run enqueued by a claim
	LastEnqueuedAt *time.Time // when (database time) that run was enqueued
	// CurrentRunID is the newest run a claim started, until it finishes (nil then); the
	// overlap policy compares a new tick with it. WaitingRunID is the buffer_one run that
	// waits for it (held until it finishes). Kind flow: flow ids (a held flow that was
	// canceled while it waited may stay named in WaitingRunID; it no longer counts).
	CurrentRunID *uuid.UUID
	WaitingRunID *uuid.UUID
	// SkippedTicks counts the ticks that got no run, by catch-up or overlap policy, since
	// the schedule was created (a lower bound for a claim far behind, CatchUpScanLimit);
	// LastSkippedAt is when (database time) a claim last skipped one.
	SkippedTicks  int64
	LastSkippedAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ScheduleParams creates a schedule. NextRunAt is computed: the first tick after now.
type ScheduleParams struct {
	Name     string
	Kind     string // "" = "task"
	CronSpec string
	Timezone string // "" = "UTC"
	Task     TaskTemplate
	Flow     *FlowParams // kind flow: the flow each tick starts (without IdempotencyKey); Task stays empty
	Enabled  *bool       // nil = true
	CatchUp  CatchUp     // "" = "one"
	Overlap  Overlap     // "" = "allow"
}

// ScheduleUpdate changes some fields of a schedule; nil fields stay. A new CronSpec or
// Timezone recomputes NextRunAt from now, and so does Enabled = true on a disabled
// schedule (as ResumeSchedule). Task replaces the whole template (its defaults apply).
type ScheduleUpdate struct {
	CronSpec *string
	Timezone *string
	Task     *TaskTemplate
	Flow     *FlowParams // replaces a kind flow schedule's whole flow
	Enabled  *bool
	CatchUp  *CatchUp
	Overlap  *Overlap
}

// ClaimSchedulesParams asks for up to Limit due, enabled schedules.
type ClaimSchedulesParams struct {
	Limit int // >= 1
}

// ScheduleClaim reports one claimed schedule: the runs it enqueued (tasks, in tick
// order; a tick whose run already existed is not repeated; a buffered run is held, with
// ScheduledFor = HeldRunAt) and the ticks the catch-up and overlap policies skipped.
type ScheduleClaim struct {
	Name         string
	Runs         []*Task
	Flows        []*Flow // kind flow: the flows the claim started, in tick order (Runs stays empty)
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
	// tick after now (ticks missed while paused never run). Resuming an enabled schedule
	// changes nothing.
	PauseSchedule(ctx context.Context, name string) (*Schedule, error)
	ResumeSchedule(ctx context.Context, name string) (*Schedule, error)
	// RescheduleSchedule sets NextRunAt.
	RescheduleSchedule(ctx context.Context, name string, nextRunAt time.Time) (*Schedule, error)
	// TriggerSchedule enqueues one run now without moving NextRunAt (ErrScheduleOfKindFlow
	// for a kind flow schedule).
	TriggerSchedule(ctx context.Context, name string) (*Task, error)
	// TriggerScheduleFlow starts one flow of a kind flow schedule now, keyed
	// schedule:<name>:trigger:<nanoseconds>, without moving NextRunAt
	// (ErrScheduleOfKindTask for a kind task schedule).
	TriggerScheduleFlow(ctx context.Context, name string) (*Flow, error)
	// ClaimDueSchedules claims due, enabled schedules (SKIP LOCKED) and, in the same
	// transaction per claim, enqueues their runs per the catch-up and overlap policies
	// (cancel_other also cancels the previous run) and advances NextRunAt. A
	// cancel_other schedule whose running task (or, for kind flow, a live task or the row
	// of its running flow) is locked by another transaction at that moment (an outcome
	// being written) is left due for a later claim. Concurrent callers never claim the same schedule twice, and no tick is
	// ever enqueued twice (the idempotency key guarantees it even across restores).
	ClaimDueSchedules(ctx context.Context, params ClaimSchedulesParams) ([]ScheduleClaim, error)
	// ListScheduleRuns returns the tasks a schedule created (by claims or triggers),
	// newest first (by id). ErrNotFound when no schedule has the name and no run names it.
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

// CatchUpScanLimit bounds how many due ticks a claim of a CatchUpOne or CatchUpSkip
// schedule counts one by one. Below it SkippedTicks is exact; a schedule further behind
// reports the ticks counted (CatchUpScanLimit-1 under one, CatchUpScanLimit under skip),
// a lower bound. The latest due tick is still found exactly (by bisection), so a schedule
// years behind costs a claim a bounded number of tick computations, not a scan.
//
// The rule of a claim, with due ticks = NextRunAt and every following tick <= now:
// all enqueues each due tick in order, at most MaxCatchUpRuns (NextRunAt becomes the
// first tick not enqueued, still due if more remain); one enqueues only the latest due
// tick and counts the others skipped; skip enqueues NextRunAt's tick when it is the only
// due tick (on time) and otherwise none, counting all skipped. Under one and skip,
// NextRunAt becomes the first tick after now.
const CatchUpScanLimit = 1000

// The rule of overlap, applied to the ticks catch-up chose (in order), with "busy" =
// CurrentRunID names an unfinished task (kind flow: a RUNNING flow) and "waiting" =
// WaitingRunID a held one (kind flow: a held flow still RUNNING, created but not started):
// allow runs them all; skip runs the first when not busy, and skips the rest (they would
// overlap it); cancel_other runs the last (each would cancel the one before) and cancels
// the current run; buffer_one runs the first when not busy and holds the next one,
// holds the first when busy and nothing waits, and skips the rest.
//
// Valid reports whether o is a known overlap policy.
func (o Overlap) Valid() bool {
	return o == OverlapAllow || o == OverlapSkip || o == OverlapBufferOne || o == OverlapCancelOther
}

func invalidOverlap(o Overlap) error {
	return fmt.Errorf("%w: overlap must be allow, skip, buffer_one or cancel_other, got %q", ErrInvalid, o)
}

// Valid reports whether c is a known catch-up policy.
func (c CatchUp) Valid() bool {
	return c == CatchUpSkip || c == CatchUpOne || c == CatchUpAll
}

// Normalize fills the template's defaults (queue, payload, max attempts) and validates
// it with the same rules as a task (CreateParams.Normalize).
func (t *TaskTemplate) Normalize() error {
	p := CreateParams{Kind: t.Kind, Queue: t.Queue, Payload: t.Payload, MaxAttempts: t.MaxAttempts}
	if err := p.Normalize(); err != nil {
		return fmt.Errorf("task template: %w", err)
	}
	t.Queue, t.Payload, t.MaxAttempts = p.Queue, p.Payload, p.MaxAttempts
	return nil
}

// Normalize fills defaults (kind, time zone, enabled, catch-up, the template's) and
// checks everything but the cron spec and time zone, which the adapters check by
// computing the first tick (an invalid one is ErrInvalid naming the field).
func (p *ScheduleParams) Normalize() error {
	if err := ValidateScheduleName(p.Name); err != nil {
		return err
	}
	if p.Kind == "" {
		p.Kind = ScheduleKindTask
	}
	if err := validateScheduleKind(p.Kind); err != nil {
		return err
	}
	if err := validateCronSpec(p.CronSpec); err != nil {
		return err
	}
	if p.Timezone == "" {
		p.Timezone = "UTC"
	}
	if err := validateTimezone(p.Timezone); err != nil {
		return err
	}
	if p.Enabled == nil {
		enabled := true
		p.Enabled = &enabled
	}
	if p.CatchUp == "" {
		p.CatchUp = CatchUpOne
	}
	if !p.CatchUp.Valid() {
		return fmt.Errorf("%w: catch_up must be skip, one or all, got %q", ErrInvalid, p.CatchUp)
	}
	if p.Overlap == "" {
		p.Overlap = OverlapAllow
	}
	if !p.Overlap.Valid() {
		return invalidOverlap(p.Overlap)
	}
	if p.Kind == ScheduleKindFlow {
		return p.normalizeFlow()
	}
	if p.Flow != nil {
		return fmt.Errorf("%w: a schedule of kind task has a task, not a flow (kind flow takes a flow)", ErrInvalid)
	}
	return p.Task.Normalize()
}

// normalizeFlow checks a kind flow schedule: a valid flow template, no task; Task
// becomes the placeholder the store's columns need.
func (p *ScheduleParams) normalizeFlow() error {
	flow, err := normalizeFlowTemplate(p.Flow)
	if err != nil {
		return err
	}
	// Empty, or the placeholder of a Normalize before: normalizing twice is harmless.
	placeholder := FlowPlaceholderTask(flow)
	if t := p.Task; !(t.Kind == "" && t.Queue == "" && len(t.Payload) == 0 && t.MaxAttempts == 0) &&
		!(t.Kind == placeholder.Kind && t.Queue == placeholder.Queue && string(t.Payload) == string(placeholder.Payload) &&
			t.MaxAttempts == placeholder.MaxAttempts) {
		return fmt.Errorf("%w: a schedule of kind flow has a flow, not a task", ErrInvalid)
	}
	p.Flow, p.Task = flow, placeholder
	return nil
}

// Normalize checks the fields an update sets and fills the template's defaults. A
// Timezone of "" means "UTC".
func (u *ScheduleUpdate) Normalize() error {
	if u.CronSpec != nil {
		if err := validateCronSpec(*u.CronSpec); err != nil {
			return err
		}
	}
	if u.Timezone != nil {
		tz := *u.Timezone
		if tz == "" {
			tz = "UTC"
		}
		if err := validateTimezone(tz); err != nil {
			return err
		}
		u.Timezone = &tz
	}
	if u.CatchUp != nil && !u.CatchUp.Valid() {
		return fmt.Errorf("%w: catch_up must be skip, one or all, got %q", ErrInvalid, *u.CatchUp)
	}
	if u.Overlap != nil && !u.Overlap.Valid() {
		return invalidOverlap(*u.Overlap)
	}
	if u.Task != nil {
		tmpl := *u.Task
		if err := tmpl.Normalize(); err != nil {
			return err
		}
		u.Task = &tmpl
	}
	if u.Flow != nil {
		flow, err := normalizeFlowTemplate(u.Flow)
		if err != nil {
			return err
		}
		u.Flow = flow
	}
	return nil
}

func validateScheduleKind(kind string) error {
	switch kind {
	case ScheduleKindTask:
		return nil
	case ScheduleKindFlow:
		return nil
	}
	return fmt.Errorf("%w: kind must be %q or %q, got %q", ErrInvalid, ScheduleKindTask, ScheduleKindFlow, kind)
}

// maxCronSpecLength and maxTimezoneLength keep absurd input away from the parsers.
const (
	maxCronSpecLength = 256
	maxTimezoneLength = 64
)

func validateCronSpec(spec string) error {
	switch {
	case spec == "":
		return fmt.Errorf("%w: cron_spec is required", ErrInvalid)
	case len(spec) > maxCronSpecLength:
		return fmt.Errorf("%w: cron_spec is longer than %d characters", ErrInvalid, maxCronSpecLength)
	case !plainText(spec):
		return fmt.Errorf("%w: cron_spec must be printable UTF-8 text", ErrInvalid)
	}
	return nil
}

func validateTimezone(tz string) error {
	if len(tz) > maxTimezoneLength {
		return fmt.Errorf("%w: timezone is longer than %d characters", ErrInvalid, maxTimezoneLength)
	}
	if !plainText(tz) {
		return fmt.Errorf("%w: timezone must be printable UTF-8 text", ErrInvalid)
	}
	return nil
}

// plainText: valid UTF-8 without control characters (PostgreSQL text rejects NUL).
func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' {
			return false
		}
	}
	return true
}
