package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/store"
)

// `rota flows start|list|get|cancel|replay` (DESIGN.md section 10).

func runFlows(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "flows", []subcommand{
		{"start", "start a flow from a JSON file ('-' = standard input): flows start <file> [--wait]", runFlowsStart},
		{"list", "list flows, newest first (--status, --name, --all)", runFlowsList},
		{"get", "show a flow and its steps: flows get <id>", flowAction("get", (*apiclient.Client).GetFlow)},
		{"cancel", "cancel a running flow: flows cancel <id>", flowAction("cancel", (*apiclient.Client).CancelFlow)},
		{"replay", "run a FAILED or CANCELED flow's failed and canceled steps again: flows replay <id>", flowAction("replay", (*apiclient.Client).ReplayFlow)},
	}, args, stdout, stderr)
}

// maxFlowFileBytes bounds a flow file (flows start, schedules --flow-file): the server
// takes bodies up to 16 MiB.
const maxFlowFileBytes = 16 << 20

func runFlowsStart(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("flows start", stdout)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota flows start <file.json | -> [flags]")
		fmt.Fprintln(fs.Output(), `The file holds the create body: {"name"?, "queue"?, "idempotency_key"?, "steps": [{"name", "kind", "payload"?, "depends_on"?, "for_each"?, ...}]}`)
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.register(fs)
	wait := fs.Bool("wait", false, "wait until the flow ended; exit 1 unless it SUCCEEDED")
	waitTimeout := fs.Duration("wait-timeout", defaultWaitTimeout, "with --wait: give up after this long and exit 1 (0 = wait as long as it takes)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(err)
	}
	switch len(pos) {
	case 0:
		return usagef("flows start needs a JSON file ('-' = standard input)")
	case 1:
	default:
		return usagef("flows start: unexpected argument %q (give one file)", pos[1])
	}
	body, err := readFlowFile("flows start", pos[0])
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	flow, created, err := c.StartFlow(ctx, body)
	if err != nil {
		return cf.explain(err)
	}
	if !created && !cf.json {
		fmt.Fprintf(stderr, "rota: the idempotency key names flow %s, which already exists; nothing was started\n", flow.ID)
	}
	if *wait {
		if flow, err = waitForFlow(ctx, c, flow, *waitTimeout); err != nil {
			return cf.explain(err)
		}
	}
	if err := printFlow(stdout, cf.json, flow); err != nil {
		return err
	}
	if *wait && flow.Status != "SUCCEEDED" {
		return fmt.Errorf("flow %s ended %s%s", flow.ID, flow.Status, failedStepsNote(flow))
	}
	return nil
}

// readFlowFile reads a flow body (a JSON object) from a file or, for "-", standard
// input, for `flows start` and `schedules --flow-file` (what names the option in
// errors); the server checks the rest.
func readFlowFile(what, name string) (json.RawMessage, error) {
	if name == "" {
		return nil, usagef("%s needs a file name ('-' = standard input)", what)
	}
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, maxFlowFileBytes+1))
	} else {
		b, err = os.ReadFile(name)
	}
	switch {
	case err != nil:
		return nil, usagef("%s: %v", what, err)
	case len(b) > maxFlowFileBytes:
		return nil, usagef("%s %s: larger than %d bytes", what, name, maxFlowFileBytes)
	case !json.Valid(b):
		return nil, usagef("%s %s: not valid JSON", what, name)
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil, usagef(`%s %s: want a JSON object such as {"steps": [{"name": "a", "kind": "extract"}]}`, what, name)
	}
	return b, nil
}

// waitForFlow polls until the flow ended, at most limit (0 = until ctx ends).
func waitForFlow(ctx context.Context, c *apiclient.Client, flow *apiclient.Flow, limit time.Duration) (*apiclient.Flow, error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	interval := 50 * time.Millisecond
	for !flow.Ended() {
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && limit > 0 {
				return nil, fmt.Errorf("flow %s is still RUNNING after --wait-timeout %s (%s)", flow.ID, limit, stepSummary(flow))
			}
			return nil, fmt.Errorf("stopped waiting for flow %s: %w", flow.ID, ctx.Err())
		case <-timer.C:
		}
		next, err := c.GetFlow(ctx, flow.ID)
		if err != nil {
			if ctx.Err() != nil {
				continue // reported by the select above
			}
			return nil, err
		}
		flow = next
		interval = min(interval*2, time.Second)
	}
	return flow, nil
}

// stepSummary is "extract SUCCEEDED, transform PROCESSING, load WAITING".
func stepSummary(f *apiclient.Flow) string {
	parts := make([]string, len(f.Steps))
	for i, s := range f.Steps {
		parts[i] = s.Name + " " + s.Status
	}
	return strings.Join(parts, ", ")
}

// failedStepsNote names the steps that failed, for the one-line error of --wait.
func failedStepsNote(f *apiclient.Flow) string {
	var failed []string
	for _, s := range f.Steps {
		if s.Status == "FAILED" || s.Status == "DEAD" {
			note := s.Name
			if s.Error != "" {
				note += " (" + truncate(oneLine(s.Error), 120) + ")"
			}
			failed = append(failed, note)
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return ": failed steps: " + strings.Join(failed, ", ")
}

var flowStatuses = []string{"RUNNING", "SUCCEEDED", "FAILED", "CANCELED"}

func runFlowsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("flows list", stdout)
	var cf clientFlags
	cf.register(fs)
	status := fs.String("status", "", "only these statuses, comma-separated (RUNNING, SUCCEEDED, FAILED, CANCELED)")
	name := fs.String("name", "", "only flows of this name")
	limit := fs.Int("limit", 0, "flows per page, 1-1000 (default 50; 500 with --all)")
	cursor := fs.String("cursor", "", "start at this page (the next_cursor of the previous one)")
	all := fs.Bool("all", false, "follow the cursors and list every matching flow")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(err)
	}
	if len(pos) > 0 {
		return usagef("flows list: unexpected argument %q", pos[0])
	}
	var statuses []string
	for part := range strings.SplitSeq(*status, ",") {
		part = strings.ToUpper(strings.TrimSpace(part))
		if part == "" {
			continue
		}
		if !store.FlowStatus(part).Valid() {
			return usagef("--status %q: want one or more of %s", part, strings.Join(flowStatuses, ", "))
		}
		statuses = append(statuses, part)
	}
	if err := checkLimit(*limit); err != nil {
		return err
	}
	if err := store.ValidateFilter("name", *name); err != nil {
		return usagef("--name: %v", err)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	params := apiclient.ListFlowsParams{Statuses: statuses, Name: *name, Limit: *limit, Cursor: *cursor}
	if *all && params.Limit == 0 {
		params.Limit = 500
	}
	flows, next, err := listPages(*all, func() ([]apiclient.Flow, string, error) {
		page, err := c.ListFlows(ctx, params)
		if err != nil {
			return nil, "", err
		}
		params.Cursor = page.NextCursor
		return page.Flows, page.NextCursor, nil
	})
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		raw := make([]json.RawMessage, len(flows))
		for i := range flows {
			raw[i] = rawOrMarshal(flows[i].Raw(), flows[i])
		}
		return writeJSON(stdout, struct {
			Flows      []json.RawMessage `json:"flows"`
			NextCursor string            `json:"next_cursor"`
		}{raw, next})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tQUEUE\tCREATED_AT\tCOMPLETED_AT")
	for i := range flows {
		f := &flows[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.ID, dash(f.Name), f.Status, f.Queue, fmtTime(&f.CreatedAt), dash(fmtTime(f.CompletedAt)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(stderr, "more flows: add --cursor %s (or --all)\n", next)
	}
	return nil
}

// flowAction builds `flows get|cancel|replay <id>`: one call that returns the flow.
func flowAction(name string, call func(*apiclient.Client, context.Context, string) (*apiclient.Flow, error)) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fs := newFlagSet("flows "+name, stdout)
		fs.Usage = func() {
			fmt.Fprintf(fs.Output(), "Usage: rota flows %s <id> [flags]\n", name)
			fs.PrintDefaults()
		}
		var cf clientFlags
		cf.register(fs)
		pos, err := parseArgs(fs, args)
		if err != nil {
			return helpOr(err)
		}
		switch len(pos) {
		case 0:
			return usagef("flows %s needs a flow id", name)
		case 1:
		default:
			return usagef("flows %s: unexpected argument %q (give one flow id)", name, pos[1])
		}
		id, err := uuid.Parse(strings.TrimSpace(pos[0]))
		if err != nil {
			return usagef("flows %s: %q is not a flow id (a UUID)", name, pos[0])
		}
		c, err := cf.client()
		if err != nil {
			return err
		}
		flow, err := call(c, ctx, id.String())
		if err != nil {
			return cf.explain(err)
		}
		return printFlow(stdout, cf.json, flow)
	}
}

// printFlow prints a flow's fields and a table of its steps, or its JSON.
func printFlow(w io.Writer, asJSON bool, f *apiclient.Flow) error {
	if asJSON {
		return writeJSON(w, rawOrMarshal(f.Raw(), f))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", f.ID)
	row("name", f.Name)
	row("status", f.Status)
	row("queue", f.Queue)
	row("idempotency_key", f.IdempotencyKey)
	row("created_at", fmtTime(&f.CreatedAt))
	row("completed_at", fmtTime(f.CompletedAt))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tKIND\tSTATUS\tDEPENDS_ON\tFOR_EACH\tTASKS\tOUTPUT\tERROR")
	for _, s := range f.Steps {
		output := ""
		if len(s.Output) > 0 && string(s.Output) != "null" {
			output = truncate(oneLine(string(s.Output)), 60)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Kind, s.Status, dash(strings.Join(s.DependsOn, ",")),
			dash(s.ForEach), len(s.TaskIDs), dash(output), dash(truncate(oneLine(s.Error), 80)))
	}
	return tw.Flush()
}
