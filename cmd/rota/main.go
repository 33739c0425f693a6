// Command rota runs Rota's servers and workers and talks to them.
//
// Every flag has a ROTA_ environment variable as its default; see `rota help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		// One readable line; usage errors exit 2 like flag's own.
		fmt.Fprintln(os.Stderr, "rota:", oneLine(err.Error()))
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
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
		{"schedules", "manage cron schedules on a server: schedules list|get|create|update|delete|pause|resume|trigger|reschedule|runs", runSchedules},
		{"bench", "measure drain throughput, latency and insert rates on PostgreSQL: bench [--workload drain|steady|insert|sqs|all]", runBench},
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		return nil
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

// oneLine folds a multi-line error (pgx lists every address it tried) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
