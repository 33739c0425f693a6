package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/rotaqueue/rota/internal/bench"
	"github.com/rotaqueue/rota/internal/runtime"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stdout)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: rota bench [flags]")
		fmt.Fprintln(fs.Output(), "Measures Rota on a PostgreSQL server. By default it creates a database rota_bench_<random>")
		fmt.Fprintln(fs.Output(), "there (the role needs CREATEDB), migrates it, and drops it at the end.")
		fmt.Fprintln(fs.Output(), "  drain   insert --tasks noop tasks, then time an in-process worker draining them (tasks/s, RSS)")
		fmt.Fprintln(fs.Output(), "  steady  enqueue --rate tasks/s for --duration while a worker runs (pickup and end-to-end latency)")
		fmt.Fprintln(fs.Output(), "  insert  insert throughput: batches of 1, 100, 1000, and single inserts from 8 goroutines")
		fmt.Fprintln(fs.Output(), "  sqs     with --sqs-endpoint: SQS mode drains --tasks noop tasks (one enqueuer and one worker")
		fmt.Fprintln(fs.Output(), "          with an SQS source, as serve/worker --mode sqs run by default), then the endpoint's raw")
		fmt.Fprintln(fs.Output(), "          ceiling (send, receive, delete in batches of 10, 4 clients) and the ratio. Its SQS queues")
		fmt.Fprintln(fs.Output(), "          rota-bench-<random>-* are created and deleted. all includes sqs when an endpoint is given.")
		fs.PrintDefaults()
	}
	dbURL := databaseURLFlag(fs)
	workload := fs.String("workload", "all", "what to measure: drain, steady, insert, sqs or all (or a comma-separated list)")
	tasks := fs.Int("tasks", bench.DefaultTasks, "drain and sqs: the backlog (sqs: and the ceiling's messages); insert: tasks per case")
	rate := fs.Float64("rate", bench.DefaultRate, "steady: tasks enqueued per second")
	duration := fs.Duration("duration", bench.DefaultDuration, "steady: how long the producer runs")
	insertMax := fs.Duration("insert-max", time.Minute, "insert: end a case after this long, reporting the tasks it inserted (0 = no limit)")
	concurrency := fs.Int("concurrency", envInt("ROTA_CONCURRENCY", 0), "the worker's handler goroutines; 0 = the runtime default, "+strconv.Itoa(runtime.DefaultConcurrency)+" (ROTA_CONCURRENCY)")
	asJSON := fs.Bool("json", false, "print the results as JSON, without a progress display")
	keep := fs.Bool("keep", false, "keep the benchmark database (in place: the benchmark's tasks) instead of removing it")
	sqsEndpoint := fs.String("sqs-endpoint", envOr("ROTA_SQS_ENDPOINT", ""),
		"sqs: the SQS-compatible endpoint to measure, e.g. an emulator's; credentials and region from the standard AWS chain (ROTA_SQS_ENDPOINT)")
	inPlace := fs.Bool("in-place", false, "run in --database-url's own database, whose rota schema must be migrated (rota migrate up); "+
		"the benchmark's tasks use a queue of their own and are deleted at the end")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if err := checkEnv(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("bench: unexpected argument %q", fs.Arg(0))
	}
	if err := checkBenchEndpoint(*sqsEndpoint); err != nil {
		return err
	}
	workloads, err := parseWorkloads(*workload, *sqsEndpoint != "")
	if err != nil {
		return err
	}
	switch {
	case *tasks < 1:
		return usagef("--tasks must be at least 1")
	case !(*rate > 0) || *rate > 1e6:
		return usagef("--rate must be more than 0 and at most 1000000 tasks/s")
	case *duration <= 0:
		return usagef("--duration must be positive")
	case *insertMax < 0:
		return usagef("--insert-max must not be negative")
	case *concurrency < 0:
		return usagef("--concurrency must be 0 or more")
	case *dbURL == "":
		return usagef("no database: set --database-url or ROTA_DATABASE_URL")
	}

	progress := &bench.Progress{}
	var display *progressDisplay
	var logw io.Writer = stderr
	if !*asJSON {
		display = startProgressDisplay(stderr, progress)
		logw = display
	}
	rep, err := bench.Run(ctx, bench.Options{
		DatabaseURL: *dbURL,
		InPlace:     *inPlace,
		Keep:        *keep,
		Workloads:   workloads,
		Tasks:       *tasks,
		Rate:        *rate,
		Duration:    *duration,
		InsertMax:   *insertMax,
		Concurrency: *concurrency,
		SQSEndpoint: *sqsEndpoint,
		Progress:    progress,
		Log:         logw,
	})
	if display != nil {
		display.stop()
	}
	if rep != nil {
		var werr error
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			werr = enc.Encode(rep)
		} else {
			werr = printReport(stdout, rep)
		}
		err = errors.Join(err, werr)
	}
	if ctx.Err() != nil && err != nil {
		return fmt.Errorf("bench interrupted: %w", err)
	}
	return err
}

// parseWorkloads reads --workload: one name, "all", or a comma-separated list. The sqs
// workload needs an SQS endpoint; "all" includes it when there is one.
func parseWorkloads(s string, haveSQSEndpoint bool) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "all":
			out = append(out, bench.Workloads...)
			if haveSQSEndpoint {
				out = append(out, bench.WorkloadSQS)
			}
		case bench.WorkloadDrain, bench.WorkloadSteady, bench.WorkloadInsert:
			out = append(out, name)
		case bench.WorkloadSQS:
			if !haveSQSEndpoint {
				return nil, usagef("--workload sqs needs an SQS endpoint to measure: set --sqs-endpoint or ROTA_SQS_ENDPOINT, e.g. http://127.0.0.1:4566")
			}
			out = append(out, name)
		default:
			return nil, usagef("--workload %q: want drain, steady, insert, sqs or all", name)
		}
	}
	return out, nil
}

// checkBenchEndpoint validates --sqs-endpoint ("" = none) as serve and worker do.
func checkBenchEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--sqs-endpoint %q: want a URL such as http://127.0.0.1:4566", endpoint)
	}
	return nil
}

// printReport writes the results as tables.
func printReport(w io.Writer, rep *bench.Report) error {
	env := rep.Environment
	where := "kept"
	switch {
	case rep.InPlace:
		where = "in place"
	case rep.Dropped:
		where = "dropped"
	}
	fmt.Fprintf(w, "PostgreSQL %s (fsync=%s, synchronous_commit=%s); %s %s/%s, %d CPUs (GOMAXPROCS %d)\n",
		env.Postgres, env.Fsync, env.SynchronousCommit, env.GoVersion, env.OS, env.Arch, env.CPUs, env.GOMAXPROCS)
	if env.LoadAverage != "" {
		fmt.Fprintf(w, "load average at start: %s\n", env.LoadAverage)
	}
	fmt.Fprintf(w, "database %s (%s), queue %s\n", rep.Database, where, rep.Queue)
	for _, r := range rep.Results {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		switch r.Workload {
		case bench.WorkloadDrain:
			fmt.Fprintf(w, "drain: %s noop tasks, worker concurrency %d\n", count(int64(r.Tasks)), r.Concurrency)
			fmt.Fprintf(w, "  drained in %s: %s tasks/s (%s)\n", seconds(r.Seconds), rateOf(r.TasksPerSec), workerLine(r.Worker))
			m := r.Memory
			fmt.Fprintln(tw, "  MEMORY\tDONE\tAT\tRSS\tGO HEAP IN USE")
			row := func(label string, s bench.MemorySample) {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", label, count(s.Done), seconds(s.Seconds), mib(s.RSS), mib(s.HeapInuse))
			}
			row("start", m.Start)
			for _, s := range m.Milestones {
				row(strconv.Itoa(s.Percent)+"%", s)
			}
			row("worker stopped", m.Final)
			fmt.Fprintf(tw, "  peak (%d samples)\t\t\t%s\t%s\n", m.Samples, mib(m.PeakRSS), mib(m.PeakHeap))
		case bench.WorkloadSteady:
			s := r.Steady
			fmt.Fprintf(w, "steady: %s tasks/s target, %d producers of single-task inserts, worker concurrency %d\n",
				rateOf(s.TargetRate), s.Producers, r.Concurrency)
			fmt.Fprintf(w, "  enqueued %s tasks in %s: %s tasks/s achieved (%s)\n",
				count(int64(r.Tasks)), seconds(r.Seconds), rateOf(r.TasksPerSec), workerLine(r.Worker))
			fmt.Fprintln(tw, "  LATENCY\tP50\tP95\tP99\tMAX")
			for _, l := range []struct {
				name string
				l    bench.Latency
			}{{"pickup (commit -> handler start)", s.Pickup}, {"end-to-end (commit -> SUCCEEDED committed)", s.EndToEnd}} {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", l.name, millis(l.l.P50), millis(l.l.P95), millis(l.l.P99), millis(l.l.Max))
			}
		case bench.WorkloadInsert:
			fmt.Fprintln(w, "insert: tasks/s through the client, no worker running")
			fmt.Fprintln(tw, "  CASE\tTASKS\tSECONDS\tTASKS/S\tCALL P50\tCALL P99")
			for _, c := range r.Insert {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", c.Name, count(int64(c.Tasks)), seconds(c.Seconds),
					rateOf(c.TasksPerSec), millis(c.Call.P50), millis(c.Call.P99))
			}
		case bench.WorkloadSQS:
			printSQS(w, tw, r)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// printSQS writes the sqs workload: the drain, what went through SQS, and the ceiling.
func printSQS(w io.Writer, tw *tabwriter.Writer, r *bench.Result) {
	s := r.SQS
	fmt.Fprintf(w, "sqs: %s noop tasks through SQS queue %s at %s, one enqueuer, worker concurrency %d\n",
		count(int64(r.Tasks)), s.Queue, s.Endpoint, r.Concurrency)
	fmt.Fprintf(w, "  %s; SQS: %s sent, %s received, %s deleted after their outcome, %s duplicates deleted, %d failures\n",
		workerLine(r.Worker), count(s.Sent), count(s.Received), count(s.Deleted), count(s.DeletedDuplicate), s.Failures)
	fmt.Fprintln(tw, "  MEASURE\tCOUNT\tSECONDS\tPER SECOND")
	fmt.Fprintf(tw, "  SQS mode drain (tasks)\t%s\t%s\t%s\n", count(int64(r.Tasks)), seconds(r.Seconds), rateOf(r.TasksPerSec))
	c := s.Ceiling
	fmt.Fprintf(tw, "  raw SQS ceiling (messages; batches of 10, %d clients)\t%s\t%s\t%s\n",
		c.Clients, count(int64(c.Messages)), seconds(c.Seconds), rateOf(c.MsgsPerSec))
	fmt.Fprintf(tw, "  ratio (drain / ceiling)\t\t\t%s\n", strconv.FormatFloat(s.Ratio, 'f', 2, 64))
	fmt.Fprintf(w, "  this process's CPU: %.0f µs per task in the drain, %.0f µs per message in the ceiling\n",
		s.ClientCPUPerTask, c.ClientCPUPerMsg)
}

func workerLine(c *bench.WorkerCounts) string {
	if c == nil {
		return "no worker"
	}
	return fmt.Sprintf("worker: %s claimed, %s succeeded, %d errors", count(c.Claimed), count(c.Succeeded), c.Errors)
}

// count writes n with thousands separators: 1,000,000.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func rateOf(r float64) string {
	if r >= 100 {
		return count(int64(r + 0.5))
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 2, 64) + "s" }

func millis(ms float64) string {
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
}

func mib(b uint64) string {
	if b == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MiB"
}

// progressDisplay shows the running workload on stderr: one line rewritten in place on
// a terminal, a line every few seconds otherwise (a log file, CI). It owns the writer
// while it runs; other output (the setup log) goes through its Write.
type progressDisplay struct {
	w        io.Writer
	p        *bench.Progress
	terminal bool

	mu       sync.Mutex
	drawn    bool // a progress line is on screen (terminal)
	stopCh   chan struct{}
	finished chan struct{}
}

func startProgressDisplay(w io.Writer, p *bench.Progress) *progressDisplay {
	d := &progressDisplay{w: w, p: p, terminal: isTerminal(w), stopCh: make(chan struct{}), finished: make(chan struct{})}
	interval := 5 * time.Second
	if d.terminal {
		interval = 200 * time.Millisecond
	}
	go func() {
		defer close(d.finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-d.stopCh:
				d.mu.Lock()
				d.clear()
				d.mu.Unlock()
				return
			case <-t.C:
				d.draw()
			}
		}
	}()
	return d
}

func (d *progressDisplay) draw() {
	s := d.p.Snapshot()
	if s.Workload == "" {
		return
	}
	line := fmt.Sprintf("%s: %s  %s", s.Workload, s.Phase, count(s.Done))
	if s.Total > 0 {
		frac := min(float64(s.Done)/float64(s.Total), 1)
		const width = 24
		filled := int(frac * width)
		line = fmt.Sprintf("%s: %s  [%s%s] %s/%s %3.0f%%", s.Workload, s.Phase,
			strings.Repeat("=", filled), strings.Repeat(" ", width-filled), count(s.Done), count(s.Total), frac*100)
	}
	if secs := s.Elapsed.Seconds(); secs > 0 {
		line += fmt.Sprintf("  %s/s", rateOf(float64(s.Done)/secs))
	}
	if rss := bench.ReadRSS(); rss > 0 {
		line += "  RSS " + mib(rss)
	}
	line += "  " + s.Elapsed.Round(100*time.Millisecond).String()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.terminal {
		fmt.Fprint(d.w, "\r\033[K"+line)
		d.drawn = true
	} else {
		fmt.Fprintln(d.w, line)
	}
}

// clear removes the progress line; d.mu is held.
func (d *progressDisplay) clear() {
	if d.drawn {
		fmt.Fprint(d.w, "\r\033[K")
		d.drawn = false
	}
}

// Write prints other output above the progress line.
func (d *progressDisplay) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clear()
	return d.w.Write(b)
}

func (d *progressDisplay) stop() {
	close(d.stopCh)
	<-d.finished
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
