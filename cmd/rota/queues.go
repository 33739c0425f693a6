package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/store"
)

// runQueues manages queues' flow-control settings (DESIGN.md section 11).
func runQueues(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "queues", []subcommand{
		{"list", "list queues with their settings, counts and live workers", runQueuesList},
		{"get", "show one queue: queues get <queue>", queueAction("get", (*apiclient.Client).GetQueue)},
		{"set", "change a queue's limits: queues set <queue> [--concurrency N|none] [--rate N/Ss|none] ...", runQueuesSet},
		{"pause", "stop claims of a queue's tasks (running ones finish): queues pause <queue>", queueAction("pause", (*apiclient.Client).PauseQueue)},
		{"resume", "let claims take a paused queue's tasks again: queues resume <queue>", queueAction("resume", (*apiclient.Client).ResumeQueue)},
	}, args, stdout, stderr)
}

// queueCommand parses an action's flags and its one queue name, and returns the name
// and a client.
func queueCommand(fs *flag.FlagSet, cf *clientFlags, action string, args []string) (string, *apiclient.Client, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", nil, err
	}
	switch len(pos) {
	case 0:
		return "", nil, usagef("queues %s needs a queue name", action)
	case 1:
	default:
		return "", nil, usagef("queues %s: unexpected argument %q (give one queue name)", action, pos[1])
	}
	if err := store.ValidateName("queue", pos[0]); err != nil {
		return "", nil, usagef("queues %s: %v", action, strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": "))
	}
	c, err := cf.client()
	if err != nil {
		return "", nil, err
	}
	return pos[0], c, nil
}

func queueUsage(fs *flag.FlagSet, usage string, more ...string) {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota queues "+usage)
		for _, line := range more {
			fmt.Fprintln(fs.Output(), line)
		}
		fs.PrintDefaults()
	}
}

// queueAction builds `queues get|pause|resume <queue>`: one call that returns the queue.
func queueAction(name string, call func(*apiclient.Client, context.Context, string) (*apiclient.Queue, error)) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fs := newFlagSet("queues "+name, stdout)
		queueUsage(fs, name+" <queue> [flags]")
		var cf clientFlags
		cf.register(fs)
		queue, c, err := queueCommand(fs, &cf, name, args)
		if err != nil {
			return helpOr(err)
		}
		q, err := call(c, ctx, queue)
		if err != nil {
			return cf.explain(err)
		}
		return printQueue(stdout, cf.json, q)
	}
}

func runQueuesList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("queues list", stdout)
	queueUsage(fs, "list [flags]", "Lists every queue that has tasks, settings or live workers.")
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return helpOr(err)
	}
	if len(pos) > 0 {
		return usagef("queues list: unexpected argument %q", pos[0])
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	list, err := c.ListQueues(ctx)
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		raw := make([]json.RawMessage, len(list))
		for i := range list {
			raw[i] = rawOrMarshal(list[i].Raw(), list[i])
		}
		return writeJSON(stdout, struct {
			Queues []json.RawMessage `json:"queues"`
		}{raw})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tPAUSED\tCONCURRENCY\tRATE\tGROUP_CONCURRENCY\tGROUP_RATE\tPENDING\tPROCESSING\tOLDEST_PENDING\tWORKERS")
	for i := range list {
		q := &list[i]
		fmt.Fprintf(tw, "%s\t%t\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\n", q.Name, q.Paused, fmtCount(q.Concurrency),
			fmtRate(q.Rate), fmtCount(q.GroupConcurrency), fmtRate(q.GroupRate), q.Counts["PENDING"],
			q.Counts["PROCESSING"], fmtAge(q.OldestPendingSeconds), q.Workers)
	}
	return tw.Flush()
}

// queueFlags are the flags of `queues set`; only the ones given change.
type queueFlags struct {
	concurrency, rate, groupConcurrency, groupRate string
	paused, resumed                                bool
}

func (f *queueFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.concurrency, "concurrency", "", "at most N tasks of the queue running at once, across all workers; none = no limit")
	fs.StringVar(&f.rate, "rate", "", "at most N claims per S seconds, sliding, e.g. 100/1s or 10/60s (N/S also works); none = no limit")
	fs.StringVar(&f.groupConcurrency, "group-concurrency", "", "at most N tasks of one group_key running at once; none = no limit")
	fs.StringVar(&f.groupRate, "group-rate", "", "at most N claims of one group_key per S seconds, like --rate; none = no limit")
	fs.BoolVar(&f.paused, "paused", false, "pause the queue too (like queues pause)")
	fs.BoolVar(&f.resumed, "resumed", false, "resume the queue too (like queues resume)")
}

// patch turns the flags that were given into an UpdateQueue.
func (f *queueFlags) patch(fs *flag.FlagSet) (apiclient.UpdateQueue, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var u apiclient.UpdateQueue
	var err error
	if set["concurrency"] {
		if u.Concurrency, err = parseCountFlag("concurrency", f.concurrency); err != nil {
			return u, err
		}
	}
	if set["group-concurrency"] {
		if u.GroupConcurrency, err = parseCountFlag("group-concurrency", f.groupConcurrency); err != nil {
			return u, err
		}
	}
	if set["rate"] {
		if u.Rate, err = parseRateFlag("rate", f.rate); err != nil {
			return u, err
		}
	}
	if set["group-rate"] {
		if u.GroupRate, err = parseRateFlag("group-rate", f.groupRate); err != nil {
			return u, err
		}
	}
	switch {
	case set["paused"] && set["resumed"]:
		return u, usagef("give --paused or --resumed, not both")
	case set["paused"]:
		u.Paused = &f.paused
	case set["resumed"]:
		resumed := !f.resumed
		u.Paused = &resumed
	}
	if u == (apiclient.UpdateQueue{}) {
		return u, usagef("queues set needs at least one of --concurrency, --rate, --group-concurrency, --group-rate, --paused, --resumed")
	}
	return u, nil
}

// parseCountFlag reads N or none (store.ParseCountChange), checked as the server checks
// it: the error comes without a request.
func parseCountFlag(name, v string) (*apiclient.Limit[int], error) {
	c, err := store.ParseCountChange("--"+name, v)
	if err == nil {
		p := store.QueuePatch{Concurrency: c}
		if name == "group-concurrency" {
			p = store.QueuePatch{GroupConcurrency: c}
		}
		err = p.Validate()
	}
	if err != nil {
		return nil, usagef("%s", flagProblem(name, err))
	}
	return &apiclient.Limit[int]{To: c.To}, nil
}

// parseRateFlag reads N/Ss or none (store.ParseRateChange), checked likewise.
func parseRateFlag(name, v string) (*apiclient.Limit[apiclient.RateLimit], error) {
	c, err := store.ParseRateChange("--"+name, v)
	if err == nil {
		p := store.QueuePatch{Rate: c}
		if name == "group-rate" {
			p = store.QueuePatch{GroupRate: c}
		}
		err = p.Validate()
	}
	if err != nil {
		return nil, usagef("%s", flagProblem(name, err))
	}
	if c.To == nil {
		return apiclient.NoLimit[apiclient.RateLimit](), nil
	}
	return apiclient.Set(apiclient.RateLimit{Limit: c.To.Limit, PerSeconds: c.To.PerSeconds}), nil
}

// flagProblem is a store error about a flag's value, without the sentinel's prefix and
// naming the flag (Validate names the API's field).
func flagProblem(name string, err error) string {
	msg := strings.TrimPrefix(err.Error(), store.ErrInvalid.Error()+": ")
	if !strings.HasPrefix(msg, "--") {
		msg = "--" + name + ": " + msg
	}
	return msg
}

func runQueuesSet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("queues set", stdout)
	queueUsage(fs, "set <queue> [--concurrency N|none] [--rate N/Ss|none] [--group-concurrency N|none] [--group-rate N/Ss|none] [flags]",
		"Changes the limits given and keeps the others. A queue needs no task to be configured;",
		"every claim that starts after the command returned obeys the new settings.")
	var cf clientFlags
	cf.register(fs)
	var qf queueFlags
	qf.register(fs)
	queue, c, err := queueCommand(fs, &cf, "set", args)
	if err != nil {
		return helpOr(err)
	}
	u, err := qf.patch(fs)
	if err != nil {
		return err
	}
	q, err := c.UpdateQueue(ctx, queue, u)
	if err != nil {
		return cf.explain(err)
	}
	return printQueue(stdout, cf.json, q)
}

func printQueue(w io.Writer, asJSON bool, q *apiclient.Queue) error {
	if asJSON {
		return writeJSON(w, rawOrMarshal(q.Raw(), q))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("name", q.Name)
	row("paused", fmt.Sprint(q.Paused))
	row("concurrency", fmtCount(q.Concurrency))
	row("rate", fmtRate(q.Rate))
	row("group_concurrency", fmtCount(q.GroupConcurrency))
	row("group_rate", fmtRate(q.GroupRate))
	var counts []string
	for _, st := range store.AllStatuses {
		if n := q.Counts[string(st)]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", st, n))
		}
	}
	row("counts", dash(strings.Join(counts, ", ")))
	row("oldest_pending", fmtAge(q.OldestPendingSeconds))
	row("workers", fmt.Sprint(q.Workers))
	row("updated_at", dash(fmtTime(q.UpdatedAt)))
	return tw.Flush()
}

func fmtCount(n *int) string { return store.FormatCount(n) }

func fmtRate(r *apiclient.RateLimit) string {
	if r == nil {
		return store.FormatRate(nil)
	}
	return store.FormatRate(&store.RateLimit{Limit: r.Limit, PerSeconds: r.PerSeconds})
}

// fmtAge prints the oldest pending age, "-" when nothing is due.
func fmtAge(seconds float64) string {
	if seconds <= 0 {
		return "-"
	}
	return (time.Duration(seconds * float64(time.Second))).Truncate(time.Second).String()
}
