package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rotaqueue/rota/internal/apiclient"
	"github.com/rotaqueue/rota/internal/store"
)

// runWorkers lists the live workers of a server (DESIGN.md section 12).
func runWorkers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// Help goes to stdout, like every command's -h.
	fs := newFlagSet("workers", stdout)
	fs.Usage = func() {
		fmt.Fprintln(stdout, "Usage: rota workers [--queue Q] [flags]")
		fmt.Fprintln(stdout, "Lists the live workers (seen within 30 s): Go workers and HTTP-protocol workers.")
		fs.PrintDefaults()
	}
	var cf clientFlags
	cf.register(fs)
	queue := fs.String("queue", "", "only the workers of this queue")
	pos, err := parseArgs(fs, args)
	if err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if len(pos) > 0 {
		return usagef("workers: unexpected argument %q", pos[0])
	}
	if *queue != "" {
		if err := store.ValidateName("queue", *queue); err != nil {
			return usagef("--queue: %v", err)
		}
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	ws, err := c.ListWorkers(ctx, *queue)
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		if ws == nil {
			ws = []apiclient.Worker{}
		}
		return writeJSON(stdout, struct {
			Workers []apiclient.Worker `json:"workers"`
		}{ws})
	}
	return printWorkerTable(stdout, ws, time.Now())
}

func printWorkerTable(w io.Writer, ws []apiclient.Worker, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tHOST\tMODE\tQUEUES\tKINDS\tRUNNING\tVERSION\tLAST_SEEN")
	for i := range ws {
		wk := &ws[i]
		kinds := "(unknown)"
		if wk.Kinds != nil {
			kinds = dash(truncate(strings.Join(wk.Kinds, ","), 60))
		}
		running := fmt.Sprintf("%d/%d", wk.Running, wk.Concurrency)
		if wk.Concurrency == 0 {
			running = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s ago\n", wk.ID, dash(wk.Host), wk.Mode,
			strings.Join(wk.Queues, ","), kinds, running, dash(wk.Version),
			max(now.Sub(wk.LastSeenAt), 0).Truncate(time.Second))
	}
	return tw.Flush()
}
