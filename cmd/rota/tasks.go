package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/rotaqueue/rota/internal/apiclient"
)

func runTasks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "tasks", []subcommand{
		{"list", "list tasks, newest first (--status, --queue, --kind, --all)", runTasksList},
		{"get", "show one task: tasks get <id>", taskAction("get", (*apiclient.Client).GetTask)},
		{"cancel", "cancel a task: tasks cancel <id>", taskAction("cancel", (*apiclient.Client).CancelTask)},
		{"replay", "move a DEAD, FAILED or CANCELED task back to PENDING: tasks replay <id>", taskAction("replay", (*apiclient.Client).ReplayTask)},
		{"attempts", "show a task's attempt history: tasks attempts <id>", runTasksAttempts},
	}, args, stdout, stderr)
}

func runTasksList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tasks list", stdout)
	var cf clientFlags
	cf.register(fs)
	status := fs.String("status", "", "only these statuses, comma-separated (e.g. DEAD,FAILED)")
	queue := fs.String("queue", "", "only this queue")
	kind := fs.String("kind", "", "only this kind")
	limit := fs.Int("limit", 0, "tasks per page, 1-1000 (default 50; 500 with --all)")
	cursor := fs.String("cursor", "", "start at this page (the next_cursor of the previous one)")
	all := fs.Bool("all", false, "follow the cursors and list every matching task")
	pos, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("tasks list: unexpected argument %q", pos[0])
	}
	statuses, err := parseStatuses(*status)
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
	params := apiclient.ListTasksParams{Statuses: statuses, Queue: *queue, Kind: *kind, Limit: *limit, Cursor: *cursor}
	if *all && params.Limit == 0 {
		params.Limit = 500
	}
	tasks, next, err := listPages(*all, func() ([]apiclient.Task, string, error) {
		page, err := c.ListTasks(ctx, params)
		if err != nil {
			return nil, "", err
		}
		params.Cursor = page.NextCursor
		return page.Tasks, page.NextCursor, nil
	})
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		return writeJSON(stdout, struct {
			Tasks      []json.RawMessage `json:"tasks"`
			NextCursor string            `json:"next_cursor"`
		}{rawTasks(tasks), next})
	}
	if err := printTaskTable(stdout, tasks); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(stderr, "more tasks: add --cursor %s (or --all)\n", next)
	}
	return nil
}

// taskAction builds `tasks get|cancel|replay <id>`: one call that returns the task.
func taskAction(name string, call func(*apiclient.Client, context.Context, string) (*apiclient.Task, error)) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fs := newFlagSet("tasks "+name, stdout)
		fs.Usage = func() {
			fmt.Fprintf(fs.Output(), "Usage: rota tasks %s <id> [flags]\n", name)
			fs.PrintDefaults()
		}
		var cf clientFlags
		cf.register(fs)
		pos, err := parseArgs(fs, args)
		if err != nil {
			if errors.Is(err, errHelp) {
				return nil
			}
			return err
		}
		id, err := taskIDArg("tasks "+name, pos)
		if err != nil {
			return err
		}
		c, err := cf.client()
		if err != nil {
			return err
		}
		task, err := call(c, ctx, id)
		if err != nil {
			return cf.explain(err)
		}
		if name == "cancel" && !cf.json && task.Status == "PROCESSING" && task.CancelRequestedAt != nil {
			fmt.Fprintln(stderr, "rota: the task is running; its worker has been asked to stop it and will record CANCELED")
		}
		return printTask(stdout, cf.json, task)
	}
}

func runTasksAttempts(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tasks attempts", stdout)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota tasks attempts <id> [flags]")
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	id, err := taskIDArg("tasks attempts", pos)
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	attempts, err := c.ListAttempts(ctx, id)
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		raw := make([]json.RawMessage, len(attempts))
		for i := range attempts {
			raw[i] = rawOrMarshal(attempts[i].Raw(), attempts[i])
		}
		return writeJSON(stdout, struct {
			Attempts []json.RawMessage `json:"attempts"`
		}{raw})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tOUTCOME\tWORKER\tSTARTED_AT\tDURATION\tERROR")
	for i := range attempts {
		a := &attempts[i]
		outcome, duration := a.Outcome, "-"
		if outcome == "" {
			outcome = "RUNNING"
		}
		if a.FinishedAt != nil {
			duration = a.FinishedAt.Sub(a.StartedAt).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", a.Attempt, outcome, dash(a.WorkerID),
			fmtTime(&a.StartedAt), duration, dash(truncate(oneLine(a.Error), 80)))
	}
	return tw.Flush()
}
