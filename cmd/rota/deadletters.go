package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/rotaqueue/rota/internal/apiclient"
)

func runDeadLetters(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "dead-letters", []subcommand{
		{"list", "list dead-letter events, newest first (--queue, --kind, --reason)", runDeadLettersList},
		{"replay", "replay DEAD/FAILED tasks in bulk (--task-id, --queue, --kind, --reason)", runDeadLettersReplay},
	}, args, stdout, stderr)
}

func runDeadLettersList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dead-letters list", stdout)
	var cf clientFlags
	cf.register(fs)
	queue := fs.String("queue", "", "only this queue")
	kind := fs.String("kind", "", "only this kind")
	reason := fs.String("reason", "", "only DEAD (retries exhausted) or FAILED (permanent error)")
	limit := fs.Int("limit", 0, "events per page, 1-1000 (default 50; 500 with --all)")
	cursor := fs.String("cursor", "", "start at this page (the next_cursor of the previous one)")
	all := fs.Bool("all", false, "follow the cursors and list every matching event")
	pos, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("dead-letters list: unexpected argument %q", pos[0])
	}
	r, err := parseReason(*reason)
	if err != nil {
		return err
	}
	if err := checkLimit(*limit); err != nil {
		return err
	}
	if err := checkFilters(*queue, *kind); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	params := apiclient.ListDeadLettersParams{Queue: *queue, Kind: *kind, Reason: r, Limit: *limit, Cursor: *cursor}
	if *all && params.Limit == 0 {
		params.Limit = 500
	}
	events, next, err := listPages(*all, func() ([]apiclient.DeadLetter, string, error) {
		page, err := c.ListDeadLetters(ctx, params)
		if err != nil {
			return nil, "", err
		}
		params.Cursor = page.NextCursor
		return page.DeadLetters, page.NextCursor, nil
	})
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		raw := make([]json.RawMessage, len(events))
		for i := range events {
			raw[i] = rawOrMarshal(events[i].Raw(), events[i])
		}
		return writeJSON(stdout, struct {
			DeadLetters []json.RawMessage `json:"dead_letters"`
			NextCursor  string            `json:"next_cursor"`
		}{raw, next})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK_ID\tREASON\tQUEUE\tKIND\tATTEMPTS\tWORKER\tCREATED_AT\tREPLAYED_AT\tERROR")
	for i := range events {
		d := &events[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", d.TaskID, d.Reason, d.Queue, d.Kind,
			d.AttemptCount, d.MaxAttempts, dash(d.WorkerID), fmtTime(&d.CreatedAt), dash(fmtTime(d.ReplayedAt)),
			dash(truncate(oneLine(d.Error), 60)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(stderr, "more dead letters: add --cursor %s (or --all)\n", next)
	}
	return nil
}

// stringList is a flag that may be repeated and also takes comma-separated values.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

// replaySummary is what `dead-letters replay --json` prints.
type replaySummary struct {
	Replayed int      `json:"replayed"`
	Matched  int      `json:"matched"` // DEAD/FAILED tasks that matched when the run began
	Calls    int      `json:"calls"`
	TaskIDs  []string `json:"task_ids"`
}

func runDeadLettersReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dead-letters replay", stdout)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota dead-letters replay [--task-id ID ...] [--queue Q] [--kind K] [--reason DEAD|FAILED] [flags]")
		fmt.Fprintln(fs.Output(), "Moves matching DEAD and FAILED tasks back to PENDING, --batch at a time, with progress on stderr.")
		fmt.Fprintln(fs.Output(), "Without --task-id or a filter it refuses; --all replays every DEAD and FAILED task.")
		fmt.Fprintln(fs.Output(), "A --task-id that names no task is an error (exit 1), after the others are replayed.")
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.register(fs)
	var ids stringList
	fs.Var(&ids, "task-id", "replay this task (repeatable, or comma-separated)")
	queue := fs.String("queue", "", "only this queue")
	kind := fs.String("kind", "", "only this kind")
	reason := fs.String("reason", "", "only DEAD (retries exhausted) or FAILED (permanent error)")
	batch := fs.Int("batch", 100, "tasks per replay call, 1-1000")
	all := fs.Bool("all", false, "without --task-id or a filter: confirm replaying every DEAD and FAILED task")
	pos, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("dead-letters replay: unexpected argument %q (use --task-id)", pos[0])
	}
	r, err := parseReason(*reason)
	if err != nil {
		return err
	}
	if *batch < 1 || *batch > 1000 {
		return usagef("--batch %d: want 1 to 1000", *batch)
	}
	if err := checkFilters(*queue, *kind); err != nil {
		return err
	}
	var taskIDs []string
	seen := map[string]bool{}
	for _, s := range ids {
		id, err := parseTaskID("--task-id", s)
		if err != nil {
			return err
		}
		if !seen[id] {
			seen[id] = true
			taskIDs = append(taskIDs, id)
		}
	}
	if len(taskIDs) == 0 && *queue == "" && *kind == "" && r == "" && !*all {
		return usagef("dead-letters replay without --task-id, --queue, --kind or --reason would replay every DEAD and FAILED task; add --all to confirm")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	filter := apiclient.ReplayDeadLetters{Queue: *queue, Kind: *kind, Reason: r, Limit: *batch}

	sum := replaySummary{TaskIDs: []string{}}
	progress := func() {
		fmt.Fprintf(stderr, "replayed %d of %d...\n", sum.Replayed, max(sum.Matched, sum.Replayed))
	}
	call := func(req apiclient.ReplayDeadLetters) (int, error) {
		res, err := c.ReplayDeadLetters(ctx, req)
		if err != nil {
			if sum.Replayed > 0 {
				return 0, fmt.Errorf("stopped after replaying %d: %w", sum.Replayed, cf.explain(err))
			}
			return 0, cf.explain(err)
		}
		sum.Calls++
		sum.Replayed += res.Replayed
		for i := range res.Tasks {
			sum.TaskIDs = append(sum.TaskIDs, res.Tasks[i].ID)
		}
		progress()
		return res.Replayed, nil
	}

	if len(taskIDs) > 0 {
		sum.Matched = len(taskIDs)
		for start := 0; start < len(taskIDs); start += *batch {
			req := filter
			req.TaskIDs = taskIDs[start:min(start+*batch, len(taskIDs))]
			if _, err := call(req); err != nil {
				return err
			}
		}
	} else {
		matched, err := countDeadTasks(ctx, c, filter)
		if err != nil {
			return cf.explain(err)
		}
		sum.Matched = matched
		// Loop until a call replays nothing: a call may replay less than a full batch with
		// more to come (of dead tasks sharing an idempotency key it replays only the
		// oldest). Stopping once the count taken at the start is reached also ends the run
		// if replayed tasks die again at once (a permanently failing kind) instead of
		// replaying them forever.
		for sum.Matched > 0 {
			n, err := call(filter)
			if err != nil {
				return err
			}
			if n == 0 || sum.Replayed >= sum.Matched {
				break
			}
		}
	}

	// A bulk replay acts on what matches; an id is a promise that the task exists.
	missing, err := missingTasks(ctx, c, taskIDs, sum.TaskIDs)
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		if err := writeJSON(stdout, sum); err != nil {
			return err
		}
	} else {
		printReplaySummary(stdout, sum, taskIDs, len(missing))
	}
	if len(missing) > 0 {
		return &apiclient.Error{Status: http.StatusNotFound, Code: "not_found",
			Message: fmt.Sprintf("no task with id %s", strings.Join(missing, ", "))}
	}
	return nil
}

func printReplaySummary(w io.Writer, sum replaySummary, taskIDs []string, missing int) {
	switch {
	case sum.Replayed == 0 && sum.Calls == 0:
		fmt.Fprintln(w, "no DEAD or FAILED tasks match; nothing replayed")
	case sum.Replayed == 0:
		fmt.Fprintln(w, "none of the given tasks is DEAD or FAILED; nothing replayed")
	default:
		fmt.Fprintf(w, "replayed %d task(s) to PENDING in %d call(s)\n", sum.Replayed, sum.Calls)
		if left := len(taskIDs) - sum.Replayed - missing; len(taskIDs) > 0 && left > 0 {
			fmt.Fprintf(w, "%d of the given tasks were not DEAD or FAILED and were left as they are\n", left)
		}
	}
}

// missingTasks returns the given ids that were not replayed and name no task.
func missingTasks(ctx context.Context, c *apiclient.Client, given, replayed []string) ([]string, error) {
	done := map[string]bool{}
	for _, id := range replayed {
		done[id] = true
	}
	var missing []string
	for _, id := range given {
		if done[id] {
			continue
		}
		if _, err := c.GetTask(ctx, id); apiclient.IsNotFound(err) {
			missing = append(missing, id)
		} else if err != nil {
			return nil, err
		}
	}
	return missing, nil
}

// countDeadTasks counts the DEAD/FAILED tasks a bulk replay with filter would act on, for
// the progress display: from the stats when no kind is given (one cheap call), else by
// listing the matching tasks.
func countDeadTasks(ctx context.Context, c *apiclient.Client, filter apiclient.ReplayDeadLetters) (int, error) {
	statuses := []string{"DEAD", "FAILED"}
	if filter.Reason != "" {
		statuses = []string{filter.Reason}
	}
	if filter.Kind == "" {
		st, err := c.Stats(ctx)
		if err != nil {
			return 0, err
		}
		counts := st.Totals
		if filter.Queue != "" {
			counts = nil
			for _, q := range st.Queues {
				if q.Queue == filter.Queue {
					counts = q.Counts
				}
			}
		}
		var n int64
		for _, s := range statuses {
			n += counts[s]
		}
		return int(n), nil
	}
	params := apiclient.ListTasksParams{Statuses: statuses, Queue: filter.Queue, Kind: filter.Kind, Limit: 1000}
	n := 0
	for {
		page, err := c.ListTasks(ctx, params)
		if err != nil {
			return 0, err
		}
		n += len(page.Tasks)
		if page.NextCursor == "" {
			return n, nil
		}
		params.Cursor = page.NextCursor
	}
}
