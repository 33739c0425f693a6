package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// label names what a result measured: the system, plus the pressure mode or insert case.
func (r Result) label() string {
	switch {
	case r.Mode != "":
		return r.System + " " + r.Mode
	case r.Case != "":
		return r.System + " " + r.Case
	}
	return r.System
}

func (r Result) line() string {
	load := ""
	if r.Load1 != "" {
		load = "  load " + r.Load1
	}
	switch r.Workload {
	case workloadDrain, workloadPressure:
		cpu := fmt.Sprintf("  cpu/task client %4.0fus", r.ClientCPUus)
		if r.ServerCPUus > 0 {
			cpu += fmt.Sprintf(" server %4.0fus", r.ServerCPUus)
		}
		blocks := ""
		if b := r.Blocks; b != nil {
			blocks = fmt.Sprintf("  index blocks/task first %.1f last %.1f, claim index %.2f / %.2f", b.IndexFirst, b.IndexLast, b.ClaimIndexFirst, b.ClaimIndexLast)
			if b.ClaimFirst > 0 || b.ClaimLast > 0 {
				blocks += fmt.Sprintf("  claim blocks/task first %.1f last %.1f (%d statements)", b.ClaimFirst, b.ClaimLast, b.ClaimStatements)
			}
		}
		if r.Checkpoints > 0 {
			load += fmt.Sprintf("  checkpoints %d", r.Checkpoints)
		}
		if r.Autovacuums > 0 {
			load += fmt.Sprintf("  autovacuums %d", r.Autovacuums)
		}
		return fmt.Sprintf("pair %d  %-8s %-28s %8d jobs  %7.2fs  %9.0f tasks/s%s%s%s", r.Pair, r.Workload, r.label(), r.Jobs, r.Seconds, r.TasksPerSec, cpu, blocks, load)
	case workloadInsert:
		return fmt.Sprintf("pair %d  insert   %-28s %8d jobs  %7.2fs  %9.0f tasks/s%s", r.Pair, r.label(), r.Jobs, r.Seconds, r.TasksPerSec, load)
	}
	if r.RateAchieved < 0.95*float64(r.TargetRate) {
		load += fmt.Sprintf("  (below the %d/s asked: the inserts could not go faster; more --producers, unless the inserts themselves are the limit)", r.TargetRate)
	}
	if r.Stages != nil {
		load += "\n        " + r.Stages.String()
	}
	for _, st := range r.Statements {
		load += "\n        " + st.String()
	}
	return fmt.Sprintf("pair %d  steady   %-28s %8d jobs  %5.0f/s  pickup p50 %6.2fms p95 %6.2fms p99 %6.2fms max %7.2fms  e2e p50 %6.2fms p95 %6.2fms p99 %6.2fms max %7.2fms  cpu/task client %4.0fus server %4.0fus%s",
		r.Pair, r.label(), r.Jobs, r.RateAchieved, r.P50ms, r.P95ms, r.P99ms, r.MaxMs, r.E2EP50ms, r.E2EP95ms, r.E2EP99ms, r.E2EMaxMs, r.ClientCPUus, r.ServerCPUus, load)
}

type metric struct {
	name     string
	workload string
	value    func(Result) float64
}

func tasksPerSec(r Result) float64 { return r.TasksPerSec }

// comparedMetrics compare each Rota variant with each River variant.
var comparedMetrics = []metric{
	{"drain tasks/s", workloadDrain, tasksPerSec},
	{"steady p50 pickup", workloadSteady, func(r Result) float64 { return r.P50ms }},
	{"steady p99 pickup", workloadSteady, func(r Result) float64 { return r.P99ms }},
	{"steady p50 e2e", workloadSteady, func(r Result) float64 { return r.E2EP50ms }},
	{"steady p99 e2e", workloadSteady, func(r Result) float64 { return r.E2EP99ms }},
}

// ratios divides, pair by pair: each Rota variant's drain and steady figures by each
// River variant's; each pressure mode's tasks/s by the same system's plain drain; each
// Rota insert case's tasks/s by River's InsertMany and InsertManyFast.
func ratios(runs []Result, rivers, rotas []system) []Ratio {
	var out []Ratio
	for _, m := range comparedMetrics {
		for _, ro := range rotas {
			for _, rv := range rivers {
				out = appendRatio(out, runs, m, m.workload+"/"+ro.Name(), m.workload+"/"+rv.Name())
			}
		}
	}
	pressure := metric{"pressure tasks/s", workloadPressure, tasksPerSec}
	var pressured []string
	for _, r := range runs {
		if r.Workload == workloadPressure && !slices.Contains(pressured, r.System) {
			pressured = append(pressured, r.System)
		}
	}
	for _, sys := range pressured {
		for _, mode := range pressureModes[1:] {
			out = appendRatio(out, runs, pressure, workloadPressure+"/"+sys+" "+mode, workloadPressure+"/"+sys+" "+modePlain)
		}
	}
	insert := metric{"insert tasks/s", workloadInsert, tasksPerSec}
	for _, c := range []string{caseRotaHTTPBatch, caseRotaEnqueueMany, caseRotaEnqueueTx} {
		for _, rc := range []string{caseRiverInsertMany, caseRiverInsertManyFast} {
			out = appendRatio(out, runs, insert, workloadInsert+"/rota "+c, workloadInsert+"/river "+rc)
		}
	}
	out = appendRatio(out, runs, insert, workloadInsert+"/rota "+caseRotaEnqueueSingle, workloadInsert+"/river "+caseRiverInsertSingle)
	return out
}

// appendRatio adds the ratio of the results keyed of ("workload/label") over those keyed
// over, pair by pair, when the run measured both.
func appendRatio(out []Ratio, runs []Result, m metric, of, over string) []Ratio {
	find := func(pair int, key string) (Result, bool) {
		for _, r := range runs {
			if r.Pair == pair && r.Workload+"/"+r.label() == key {
				return r, true
			}
		}
		return Result{}, false
	}
	ra := Ratio{Metric: m.name, Of: labelOf(of), Over: labelOf(over)}
	for pair := 1; ; pair++ {
		a, ok1 := find(pair, of)
		b, ok2 := find(pair, over)
		if !ok1 || !ok2 {
			break
		}
		// A latency of 0 (all clamped) would divide by zero; floor at 1µs.
		ra.Values = append(ra.Values, max(m.value(a), 0.001)/max(m.value(b), 0.001))
	}
	if len(ra.Values) == 0 {
		return out
	}
	ra.Min, ra.Median, ra.Max = slices.Min(ra.Values), median(ra.Values), slices.Max(ra.Values)
	return append(out, ra)
}

func labelOf(key string) string {
	for i := range len(key) {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0 // a workload this run did not measure
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (rep *Report) print(w io.Writer) {
	fmt.Fprintf(w, "\nRatios over %d pairs (tasks/s: >1 means the first is faster; latency: <1 means the first is sooner)\n", rep.Opts.Pairs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tof\t/ over\tmin\tmedian\tmax\t")
	for _, r := range rep.Ratios {
		fmt.Fprintf(tw, "%s\t%s\t/ %s\t%.2f\t%.2f\t%.2f\t\n", r.Metric, r.Of, r.Over, r.Min, r.Median, r.Max)
	}
	_ = tw.Flush()

	// Medians of the raw figures, one row per label (system, system + mode, system + case).
	var labels []string
	for _, r := range rep.Runs {
		if !slices.Contains(labels, r.label()) {
			labels = append(labels, r.label())
		}
	}
	slices.Sort(labels)
	collect := func(label, workload string, f func(Result) float64) []float64 {
		var v []float64
		for _, r := range rep.Runs {
			if r.label() == label && r.Workload == workload {
				v = append(v, f(r))
			}
		}
		return v
	}
	cell := func(v []float64, format string) string {
		if len(v) == 0 || median(v) == 0 {
			return "-" // not measured in this run
		}
		return fmt.Sprintf(format, median(v))
	}
	has := func(workload string) bool {
		return slices.ContainsFunc(rep.Runs, func(r Result) bool { return r.Workload == workload })
	}

	fmt.Fprintf(w, "\nMedians over %d pairs\n", rep.Opts.Pairs)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if has(workloadDrain) || has(workloadSteady) {
		fmt.Fprintln(tw, "system\tdrain tasks/s\tclient cpu us/task\tserver cpu us/task\tsteady rate/s\tpickup p50 ms\tp95 ms\tp99 ms\te2e p50 ms\tp95 ms\tp99 ms\t")
		for _, l := range labels {
			d := func(f func(Result) float64) []float64 { return collect(l, workloadDrain, f) }
			s := func(f func(Result) float64) []float64 { return collect(l, workloadSteady, f) }
			if len(d(tasksPerSec)) == 0 && len(s(tasksPerSec)) == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", l,
				cell(d(tasksPerSec), "%.0f"),
				cell(d(func(r Result) float64 { return r.ClientCPUus }), "%.0f"),
				cell(d(func(r Result) float64 { return r.ServerCPUus }), "%.0f"),
				cell(s(func(r Result) float64 { return r.RateAchieved }), "%.0f"),
				cell(s(func(r Result) float64 { return r.P50ms }), "%.2f"),
				cell(s(func(r Result) float64 { return r.P95ms }), "%.2f"),
				cell(s(func(r Result) float64 { return r.P99ms }), "%.2f"),
				cell(s(func(r Result) float64 { return r.E2EP50ms }), "%.2f"),
				cell(s(func(r Result) float64 { return r.E2EP95ms }), "%.2f"),
				cell(s(func(r Result) float64 { return r.E2EP99ms }), "%.2f"))
		}
	}
	_ = tw.Flush()
	if has(workloadPressure) {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "pressure\ttasks/s\tserver cpu us/task\tindex blocks/task first 10%\tlast 10%\tclaim index first\tlast\tclaim stmt blocks/task first\tlast\t")
		for _, l := range labels {
			p := func(f func(Result) float64) []float64 { return collect(l, workloadPressure, f) }
			if len(p(tasksPerSec)) == 0 {
				continue
			}
			b := func(f func(*blockStats) float64) []float64 {
				return p(func(r Result) float64 {
					if r.Blocks == nil {
						return 0
					}
					return f(r.Blocks)
				})
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", l, cell(p(tasksPerSec), "%.0f"),
				cell(p(func(r Result) float64 { return r.ServerCPUus }), "%.0f"),
				cell(b(func(b *blockStats) float64 { return b.IndexFirst }), "%.1f"),
				cell(b(func(b *blockStats) float64 { return b.IndexLast }), "%.1f"),
				cell(b(func(b *blockStats) float64 { return b.ClaimIndexFirst }), "%.2f"),
				cell(b(func(b *blockStats) float64 { return b.ClaimIndexLast }), "%.2f"),
				cell(b(func(b *blockStats) float64 { return b.ClaimFirst }), "%.1f"),
				cell(b(func(b *blockStats) float64 { return b.ClaimLast }), "%.1f"))
		}
		_ = tw.Flush()
	}
	if has(workloadInsert) {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "insert (batches of %d; one per call from %d goroutines)\ttasks/s\t\n", rep.Opts.InsertBatch, rep.Opts.Producers)
		for _, l := range labels {
			if v := collect(l, workloadInsert, tasksPerSec); len(v) > 0 {
				fmt.Fprintf(tw, "%s\t%s\t\n", l, cell(v, "%.0f"))
			}
		}
		_ = tw.Flush()
	}
}
