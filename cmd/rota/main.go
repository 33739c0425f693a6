// Command rota runs Rota's servers and workers and talks to them.
//
// Every flag has a ROTA_ environment variable as its default; see `rota help`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/rotaqueue/rota/internal/apiclient"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain runs the command, reports its error on stderr and returns the exit status:
// 0, 1 for a failure, 2 for a usage error (like flag's own).
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := run(ctx, args, stdout, stderr)
	if err == nil {
		return 0
	}
	reportError(stderr, wantsJSON(args), err)
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// reportError prints err as one readable line, or, for a command given --json, as the
// API's error shape {"error":{"code","message"}} so that scripts parse one format.
func reportError(w io.Writer, asJSON bool, err error) {
	msg := oneLine(err.Error())
	if !asJSON {
		fmt.Fprintln(w, "rota:", msg)
		return
	}
	code := "error"
	var apiErr *apiclient.Error
	switch {
	case errors.Is(err, errUsage):
		code = "usage"
	case errors.As(err, &apiErr) && apiErr.Code != "":
		code = apiErr.Code
	}
	type body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Error body `json:"error"`
	}{body{code, msg}})
	fmt.Fprintf(w, "%s\n", b)
}

// wantsJSON reports whether the command line sets --json (before any "--"), read from
// the arguments so that errors found before or while parsing flags are JSON too.
func wantsJSON(args []string) bool {
	asJSON := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		asJSON = true
		if hasValue {
			asJSON, _ = strconv.ParseBool(value)
		}
	}
	return asJSON
}

var errUsage = errors.New("usage")

type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// command is one subcommand: its name, one line of help and what it runs.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"dev", "everything in one process on the in-memory store: API, dashboard, workers and schedules", runDev},
		{"serve", "API, dashboard, lease reaper, retention and schedules on PostgreSQL (--mode sqs adds the SQS enqueuer)", runServe},
		{"migrate", "apply or revert the database schema: migrate up|down|status", runMigrate},
		{"worker", "run workers with the built-in handlers (--mode poll|sqs)", runWorker},
		{"enqueue", "create a task on a server: enqueue <kind> [--payload JSON] [--wait]", runEnqueue},
		{"tasks", "list, show, cancel and replay tasks on a server: tasks list|get|cancel|replay|attempts", runTasks},
		{"dead-letters", "list dead letters and replay them in bulk: dead-letters list|replay", runDeadLetters},
		{"workers", "list the live workers of a server: workers [--queue Q]", runWorkers},
		{"queues", "manage queues' flow control on a server: queues list|get|set|pause|resume", runQueues},
		{"schedules", "manage cron schedules on a server: schedules list|get|create|update|delete|pause|resume|trigger|reschedule|runs", runSchedules},
		{"flows", "start and manage flows (DAGs of steps) on a server: flows start|list|get|cancel|replay", runFlows},
		{"stats", "show task counts by queue and status on a server", runStats},
		{"version", "print this binary's version and Go version (also --version, -v)", runVersion},
		{"bench", "measure drain throughput, latency and insert rates on PostgreSQL: bench [--workload drain|steady|insert|sqs|all]", runBench},
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) >= 2 && args[0] == "help" {
		// `rota help tasks list` is `rota tasks list -h`.
		return run(ctx, append(slices.Clone(args[1:]), "-h"), stdout, stderr)
	}
	if len(args) == 0 || isHelpArg(args[0]) {
		printUsage(stdout)
		return nil
	}
	if isVersionArg(args[0]) {
		return runVersion(ctx, args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	return usagef("unknown command %q (see 'rota help')", args[0])
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Rota: a database-first distributed task queue.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: rota <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'rota <command> -h' for a command's flags.")
}

// isHelpArg reports whether arg asks for help, as flag understands it.
func isHelpArg(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

// oneLine folds a multi-line error (pgx lists every address it tried) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
