package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/store"
)

func runSchedules(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "schedules", []subcommand{
		{"list", "list schedules with their next fire time", runSchedulesList},
		{"get", "show one schedule: schedules get <name>", scheduleAction("get", (*apiclient.Client).GetSchedule)},
		{"create", "create a schedule: schedules create <name> --cron SPEC --kind K [flags]", runSchedulesCreate},
		{"update", "change a schedule: schedules update <name> [--cron SPEC] [--tz ZONE] [--kind K] ...", runSchedulesUpdate},
		{"delete", "delete a schedule (its runs stay): schedules delete <name>", runSchedulesDelete},
		{"pause", "stop a schedule from firing: schedules pause <name>", scheduleAction("pause", (*apiclient.Client).PauseSchedule)},
		{"resume", "let a paused schedule fire again from the next tick: schedules resume <name>", scheduleAction("resume", (*apiclient.Client).ResumeSchedule)},
		{"trigger", "enqueue one run now (the next fire time stays): schedules trigger <name>", runSchedulesTrigger},
		{"reschedule", "set the next fire time: schedules reschedule <name> --at RFC3339", runSchedulesReschedule},
		{"runs", "list the tasks a schedule created, newest first: schedules runs <name>", runSchedulesRuns},
	}, args, stdout, stderr)
}

// scheduleCommand parses an action's flags and its one schedule name, and returns the
// name and a client.
func scheduleCommand(fs *flag.FlagSet, cf *clientFlags, action string, args []string) (string, *apiclient.Client, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", nil, err
	}
	switch len(pos) {
	case 0:
		return "", nil, usagef("schedules %s needs a schedule name", action)
	case 1:
	default:
		return "", nil, usagef("schedules %s: unexpected argument %q (give one schedule name)", action, pos[1])
	}
	if err := store.ValidateScheduleName(pos[0]); err != nil {
		return "", nil, usagef("schedules %s: %v", action, strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
	}
	c, err := cf.client()
	if err != nil {
		return "", nil, err
	}
	return pos[0], c, nil
}

// nameUsage sets the usage line of an action that takes a schedule name.
func nameUsage(fs *flag.FlagSet, usage string, more ...string) {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota schedules "+usage)
		for _, line := range more {
			fmt.Fprintln(fs.Output(), line)
		}
		fs.PrintDefaults()
	}
}

// helpOr turns the -h "error" into a successful return.
func helpOr(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// scheduleAction builds `schedules get|pause|resume <name>`: one call that returns the
// schedule.
func scheduleAction(name string, call func(*apiclient.Client, context.Context, string) (*apiclient.Schedule, error)) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fs := newFlagSet("schedules "+name, stdout)
		nameUsage(fs, name+" <name> [flags]")
		var cf clientFlags
		cf.register(fs)
		sched, c, err := scheduleCommand(fs, &cf, name, args)
		if err != nil {
			return helpOr(err)
		}
		s, err := call(c, ctx, sched)
		if err != nil {
			return cf.explain(err)
		}
		return printSchedule(stdout, cf.json, s)
	}
}

func runSchedulesList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedules list", stdout)
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(err)
	}
	if len(pos) > 0 {
		return usagef("schedules list: unexpected argument %q", pos[0])
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	list, err := c.ListSchedules(ctx)
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		raw := make([]json.RawMessage, len(list))
		for i := range list {
			raw[i] = rawOrMarshal(list[i].Raw(), list[i])
		}
		return writeJSON(stdout, struct {
			Schedules []json.RawMessage `json:"schedules"`
		}{raw})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tTIMEZONE\tNEXT_RUN_AT\tLAST_RUN_AT\tENABLED\tKIND\tQUEUE")
	for i := range list {
		s := &list[i]
		next := fmtZoned(&s.NextRunAt, s.Timezone)
		if !s.Enabled {
			next = "(paused)"
		}
		kind, queue := s.Task.Kind, s.Task.Queue
		if s.Flow != nil { // a flow per tick: "flow" and the flow's queue
			var f struct {
				Queue string `json:"queue"`
			}
			_ = json.Unmarshal(s.Flow, &f)
			kind, queue = "flow", f.Queue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\n", s.Name, s.CronSpec, s.Timezone, next,
			dash(fmtZoned(s.LastRunAt, s.Timezone)), s.Enabled, kind, dash(queue))
	}
	return tw.Flush()
}

// scheduleFlags are the flags of create and update. In update every one is optional and
// only the ones given change.
type scheduleFlags struct {
	cron, tz, kind, queue, payload, payloadFile, catchUp, overlap string
	flowFile                                                      string
	flow                                                          json.RawMessage // read from flowFile
	maxAttempts                                                   int
	enabled, disabled                                             bool
	set                                                           map[string]bool
}

func (f *scheduleFlags) register(fs *flag.FlagSet, update bool) {
	fs.StringVar(&f.cron, "cron", "", `cron spec: 5 fields (minute hour day-of-month month day-of-week), e.g. "*/15 * * * *", or @hourly, @daily, ...`)
	fs.StringVar(&f.tz, "tz", "", "IANA time zone the spec is read in, e.g. Europe/Berlin (default UTC)")
	fs.StringVar(&f.kind, "kind", "", "task kind (handler name) each run enqueues")
	fs.StringVar(&f.queue, "queue", "", "queue each run goes to (default \"default\")")
	fs.StringVar(&f.payload, "payload", "", "payload of each run as JSON (default {})")
	fs.StringVar(&f.payloadFile, "payload-file", "", "read the JSON payload from this file ('-' = standard input)")
	fs.IntVar(&f.maxAttempts, "max-attempts", 0, "attempts of each run before it is DEAD (0 = the server's default, "+strconv.Itoa(store.DefaultMaxAttempts)+")")
	fs.StringVar(&f.catchUp, "catch-up", "", "after downtime: skip (no missed runs), one (one run for all missed ticks; the default) or all")
	fs.StringVar(&f.overlap, "overlap", "", "while the previous run is unfinished: allow (run anyway; the default), skip (no run), buffer_one (one run waits for it) or cancel_other (cancel it and run)")
	fs.StringVar(&f.flowFile, "flow-file", "", "a schedule of kind flow: read the flow each tick starts from this file ('-' = standard input), "+
		"the body of POST /api/flows without idempotency_key; replaces --kind, --queue, --payload and --max-attempts")
	fs.BoolVar(&f.disabled, "disabled", false, "create or set the schedule paused")
	if update {
		fs.BoolVar(&f.enabled, "enabled", false, "set the schedule enabled (like resume)")
	}
}

// check validates the flags that were given (after parsing) and records which.
func (f *scheduleFlags) check(fs *flag.FlagSet) error {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.set["kind"] {
		if err := store.ValidateName("kind", f.kind); err != nil {
			return usagef("--kind: %s", strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
		}
	}
	if f.set["queue"] {
		if err := store.ValidateName("queue", f.queue); err != nil {
			return usagef("--queue: %s", strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
		}
	}
	if f.set["cron"] && strings.TrimSpace(f.cron) == "" {
		return usagef("--cron is empty: give a cron spec such as \"0 3 * * *\" or @daily")
	}
	if f.set["tz"] && f.tz == "" {
		return usagef("--tz is empty: give a time zone such as UTC or Europe/Berlin")
	}
	if f.set["catch-up"] {
		switch f.catchUp = strings.ToLower(f.catchUp); f.catchUp {
		case "skip", "one", "all":
		default:
			return usagef("--catch-up %q: want skip, one or all", f.catchUp)
		}
	}
	if f.set["overlap"] {
		f.overlap = strings.ToLower(f.overlap)
		if !store.Overlap(f.overlap).Valid() {
			return usagef("--overlap %q: want allow, skip, buffer_one or cancel_other", f.overlap)
		}
	}
	if f.maxAttempts < 0 {
		return usagef("--max-attempts must be 0 (the server's default) or more")
	}
	if f.set["enabled"] && f.set["disabled"] {
		return usagef("give --enabled or --disabled, not both")
	}
	switch {
	case f.set["payload"] && f.set["payload-file"]:
		return usagef("give --payload or --payload-file, not both")
	case f.set["payload-file"]:
		b, err := readPayloadFile(f.payloadFile)
		if err != nil {
			return err
		}
		f.payload = string(b)
		f.set["payload"] = true
	}
	if f.set["payload"] && !json.Valid([]byte(f.payload)) {
		return usagef("the payload is not valid JSON: %s", truncate(oneLine(f.payload), 80))
	}
	if f.set["flow-file"] {
		if f.changesTask() {
			return usagef("--flow-file makes a schedule of kind flow: give it without --kind, --queue, --payload and --max-attempts (the flow's steps name theirs)")
		}
		b, err := readFlowFile("--flow-file", f.flowFile)
		if err != nil {
			return err
		}
		f.flow = b
	}
	return nil
}

// applyTask sets the template fields that were given on t.
func (f *scheduleFlags) applyTask(t *apiclient.ScheduleTask) {
	if f.set["kind"] {
		t.Kind = f.kind
	}
	if f.set["queue"] {
		t.Queue = f.queue
	}
	if f.set["payload"] {
		t.Payload = json.RawMessage(f.payload)
	}
	if f.set["max-attempts"] {
		t.MaxAttempts = f.maxAttempts
	}
}

func (f *scheduleFlags) changesTask() bool {
	return f.set["kind"] || f.set["queue"] || f.set["payload"] || f.set["max-attempts"]
}

func runSchedulesCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedules create", stdout)
	nameUsage(fs, "create <name> --cron SPEC (--kind K [--queue Q] [--payload JSON] [--max-attempts N] | --flow-file FILE) [--tz ZONE] [--catch-up skip|one|all] [--overlap allow|skip|buffer_one|cancel_other] [--disabled]",
		"Creates a schedule that enqueues a task of kind K at every tick of SPEC, read in time zone ZONE;",
		"with --flow-file, one that starts the flow in FILE at every tick (a schedule of kind flow: a flow run is",
		"unfinished while it is RUNNING; buffer_one holds the next flow unstarted, cancel_other cancels the running flow).")
	var cf clientFlags
	cf.register(fs)
	var sf scheduleFlags
	sf.register(fs, false)
	name, c, err := scheduleCommand(fs, &cf, "create", args)
	if err != nil {
		return helpOr(err)
	}
	if err := sf.check(fs); err != nil {
		return err
	}
	if !sf.set["cron"] {
		return usagef("schedules create needs --cron, e.g. --cron \"0 3 * * *\" or --cron @daily")
	}
	if !sf.set["kind"] && !sf.set["flow-file"] {
		return usagef("schedules create needs --kind: the task kind each run enqueues, e.g. --kind noop (or --flow-file for a flow per tick)")
	}
	req := apiclient.CreateSchedule{Name: name, CronSpec: sf.cron, Timezone: sf.tz, CatchUp: sf.catchUp, Overlap: sf.overlap, Flow: sf.flow}
	sf.applyTask(&req.Task)
	if sf.disabled {
		req.Enabled = new(false)
	}
	s, err := c.CreateSchedule(ctx, req)
	if err != nil {
		return cf.explain(err)
	}
	return printSchedule(stdout, cf.json, s)
}

func runSchedulesUpdate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedules update", stdout)
	nameUsage(fs, "update <name> [--cron SPEC] [--tz ZONE] [--kind K] [--queue Q] [--payload JSON] [--max-attempts N] [--catch-up skip|one|all] [--overlap POLICY] [--enabled|--disabled]",
		"Changes only the fields whose flags are given. A new --cron or --tz recomputes the next fire time from now.")
	var cf clientFlags
	cf.register(fs)
	var sf scheduleFlags
	sf.register(fs, true)
	name, c, err := scheduleCommand(fs, &cf, "update", args)
	if err != nil {
		return helpOr(err)
	}
	if err := sf.check(fs); err != nil {
		return err
	}
	var req apiclient.UpdateSchedule
	if sf.set["cron"] {
		req.CronSpec = &sf.cron
	}
	if sf.set["tz"] {
		req.Timezone = &sf.tz
	}
	if sf.set["catch-up"] {
		req.CatchUp = &sf.catchUp
	}
	if sf.set["overlap"] {
		req.Overlap = &sf.overlap
	}
	switch {
	case sf.set["enabled"]:
		req.Enabled = &sf.enabled
	case sf.set["disabled"]:
		req.Enabled = new(!sf.disabled)
	}
	if sf.changesTask() {
		// The API replaces the whole template; start from the current one so that only
		// the fields given change.
		cur, err := c.GetSchedule(ctx, name)
		if err != nil {
			return cf.explain(err)
		}
		t := cur.Task
		sf.applyTask(&t)
		req.Task = &t
	}
	if sf.set["flow-file"] {
		req.Flow = sf.flow
	}
	if req.CronSpec == nil && req.Timezone == nil && req.Task == nil && req.Flow == nil && req.Enabled == nil && req.CatchUp == nil && req.Overlap == nil {
		return usagef("schedules update: nothing to change; give one or more of --cron, --tz, --kind, --queue, --payload, --max-attempts, --flow-file, --catch-up, --overlap, --enabled, --disabled")
	}
	s, err := c.UpdateSchedule(ctx, name, req)
	if err != nil {
		return cf.explain(err)
	}
	return printSchedule(stdout, cf.json, s)
}

func runSchedulesDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedules delete", stdout)
	nameUsage(fs, "delete <name> [flags]", "Deletes the schedule; the tasks it already enqueued stay.")
	var cf clientFlags
	cf.register(fs)
	name, c, err := scheduleCommand(fs, &cf, "delete", args)
	if err != nil {
		return helpOr(err)
	}
	if err := c.DeleteSchedule(ctx, name); err != nil {
		return cf.explain(err)
	}
	if cf.json {
		return writeJSON(stdout, struct {
			Name    string `json:"name"`
			Deleted bool   `json:"deleted"`
		}{name, true})
	}
	fmt.Fprintf(stdout, "deleted schedule %s\n", name)
	return nil
}

func runSchedulesTrigger(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedules trigger", stdout)
	nameUsage(fs, "trigger <name> [flags]",
		"Enqueues one run now, also when the schedule is paused, and prints the task (for a schedule of kind flow: starts one flow and prints it). The next fire time does not move.")
	var cf clientFlags
	cf.register(fs)
	name, c, err := scheduleCommand(fs, &cf, "trigger", args)
	if err != nil {
		return helpOr(err)
	}
	sc, err := c.GetSchedule(ctx, name)
	if err != nil {
		return cf.explain(err)
	}
	if sc.Kind == "flow" {
		flow, err := c.TriggerScheduleFlow(ctx, name)
		if err != nil {
			return cf.explain(err)
		}
		return printTriggeredFlow(stdout, cf.json, flow)
	}
	task, err := c.TriggerSchedule(ctx, name)
	if err != nil {
		return cf.explain(err)
	}
	return printTask(stdout, cf.json, task)
}

func runSchedulesReschedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedules reschedule", stdout)
	nameUsage(fs, "reschedule <name> --at RFC3339 [flags]",
		"Sets the next fire time; later ticks follow the cron spec. A past time makes the schedule due at once.")
	var cf clientFlags
	cf.register(fs)
	at := fs.String("at", "", "the next fire time (RFC 3339, e.g. 2030-01-02T15:04:05Z)")
	name, c, err := scheduleCommand(fs, &cf, "reschedule", args)
	if err != nil {
		return helpOr(err)
	}
	if *at == "" {
		return usagef("schedules reschedule needs --at, e.g. --at 2030-01-02T15:04:05Z")
	}
	t, err := parseAt(*at)
	if err != nil {
		return err
	}
	s, err := c.RescheduleSchedule(ctx, name, t)
	if err != nil {
		return cf.explain(err)
	}
	return printSchedule(stdout, cf.json, s)
}

func runSchedulesRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("schedules runs", stdout)
	nameUsage(fs, "runs <name> [--limit N] [--cursor C] [--all] [flags]",
		"Lists the tasks the schedule created (by its ticks or by triggers), newest first.")
	var cf clientFlags
	cf.register(fs)
	limit := fs.Int("limit", 0, "runs per page, 1-1000 (default 50; 500 with --all)")
	cursor := fs.String("cursor", "", "start at this page (the next_cursor of the previous one)")
	all := fs.Bool("all", false, "follow the cursors and list every run")
	name, c, err := scheduleCommand(fs, &cf, "runs", args)
	if err != nil {
		return helpOr(err)
	}
	if err := checkLimit(*limit); err != nil {
		return err
	}
	params := apiclient.ListScheduleRunsParams{Limit: *limit, Cursor: *cursor}
	if *all && params.Limit == 0 {
		params.Limit = 500
	}
	var skipped *int64
	tasks, next, err := listPages(*all, func() ([]apiclient.Task, string, error) {
		page, err := c.ListScheduleRuns(ctx, name, params)
		if err != nil {
			return nil, "", err
		}
		params.Cursor, skipped = page.NextCursor, page.SkippedTicks
		return page.Tasks, page.NextCursor, nil
	})
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		return writeJSON(stdout, struct {
			Tasks        []json.RawMessage `json:"tasks"`
			NextCursor   string            `json:"next_cursor"`
			SkippedTicks *int64            `json:"skipped_ticks,omitempty"`
		}{rawTasks(tasks), next, skipped})
	}
	if err := printTaskTable(stdout, tasks); err != nil {
		return err
	}
	if skipped != nil && *skipped > 0 {
		fmt.Fprintf(stderr, "%d ticks skipped (catch-up or overlap; see schedules get)\n", *skipped)
	}
	if next != "" {
		fmt.Fprintf(stderr, "more runs: add --cursor %s (or --all)\n", next)
	}
	return nil
}

// printSchedule prints one schedule, field per line, or its JSON. Times are shown in the
// schedule's time zone, which its cron spec is read in.
func printSchedule(w io.Writer, asJSON bool, s *apiclient.Schedule) error {
	if asJSON {
		return writeJSON(w, rawOrMarshal(s.Raw(), s))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("name", s.Name)
	row("enabled", fmt.Sprint(s.Enabled))
	row("cron_spec", s.CronSpec)
	row("timezone", s.Timezone)
	next := fmtZoned(&s.NextRunAt, s.Timezone)
	if !s.Enabled {
		next += " (paused: does not fire)"
	}
	row("next_run_at", next)
	row("last_run_at", dash(fmtZoned(s.LastRunAt, s.Timezone)))
	row("last_enqueued_at", dash(fmtZoned(s.LastEnqueuedAt, s.Timezone)))
	row("catch_up", s.CatchUp)
	row("overlap", s.Overlap)
	row("current_run_id", dash(derefOr(s.CurrentRunID)))
	row("waiting_run_id", dash(derefOr(s.WaitingRunID)))
	row("skipped_ticks", fmt.Sprint(s.SkippedTicks))
	row("last_skipped_at", dash(fmtZoned(s.LastSkippedAt, s.Timezone)))
	row("kind", s.Kind)
	if s.Flow != nil {
		var compact bytes.Buffer
		if json.Compact(&compact, s.Flow) != nil {
			compact.Reset()
			compact.Write(s.Flow)
		}
		row("flow", compact.String())
	} else {
		row("task.kind", s.Task.Kind)
		row("task.queue", s.Task.Queue)
		row("task.payload", string(s.Task.Payload))
		row("task.max_attempts", fmt.Sprint(s.Task.MaxAttempts))
	}
	row("created_at", fmtTime(&s.CreatedAt))
	row("updated_at", fmtTime(&s.UpdatedAt))
	return tw.Flush()
}

// derefOr is *p, or "" for nil.
func derefOr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// fmtZoned prints a time as RFC 3339 in the time zone tz (UTC when this machine does not
// know the zone); "" for nil or zero.
func fmtZoned(t *time.Time, tz string) string {
	if t == nil || t.IsZero() {
		return ""
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format(time.RFC3339)
}

// printTriggeredFlow prints the flow a trigger started: its JSON, or a short summary.
func printTriggeredFlow(w io.Writer, asJSON bool, raw json.RawMessage) error {
	if asJSON {
		return writeJSON(w, raw)
	}
	var f struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Steps  []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("read the flow started: %w", err)
	}
	fmt.Fprintf(w, "started flow %s (%s)\n", f.ID, f.Status)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS")
	for _, st := range f.Steps {
		fmt.Fprintf(tw, "%s\t%s\n", st.Name, st.Status)
	}
	return tw.Flush()
}
