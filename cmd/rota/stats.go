package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/rotaqueue/rota/internal/apiclient"
)

// runStats is `rota stats`: GET /api/stats as a table, one row per queue and a total.
func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stats", stdout)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota stats [flags]")
		fmt.Fprintln(fs.Output(), "Shows task counts by queue and status, the oldest due task and the expired leases of each queue.")
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
	if len(pos) > 0 {
		return usagef("stats: unexpected argument %q", pos[0])
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	st, err := c.Stats(ctx)
	if err != nil {
		return cf.explain(err)
	}
	if cf.json {
		return writeJSON(stdout, rawOrMarshal(st.Raw(), st))
	}
	return printStats(stdout, st)
}

func printStats(w io.Writer, st *apiclient.Stats) error {
	queues := slices.Clone(st.Queues)
	slices.SortFunc(queues, func(a, b apiclient.QueueStats) int {
		if a.Queue < b.Queue {
			return -1
		}
		if a.Queue > b.Queue {
			return 1
		}
		return 0
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	header := "QUEUE\t"
	for _, s := range validStatuses {
		header += s + "\t"
	}
	fmt.Fprintln(tw, header+"EXPIRED_LEASES\tOLDEST_DUE_AT\t")
	row := func(name string, counts map[string]int64, expired string, oldest string) {
		line := name + "\t"
		for _, s := range validStatuses {
			line += fmt.Sprint(counts[s]) + "\t"
		}
		fmt.Fprintln(tw, line+expired+"\t"+oldest+"\t")
	}
	var expired int64
	for _, q := range queues {
		expired += q.ExpiredLeases
		row(q.Queue, q.Counts, fmt.Sprint(q.ExpiredLeases), dash(fmtTime(q.OldestDueAt)))
	}
	row("TOTAL", st.Totals, fmt.Sprint(expired), "")
	return tw.Flush()
}
