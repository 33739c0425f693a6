package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/bench"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

func TestBenchUsageErrors(t *testing.T) {
	t.Setenv("ROTA_DATABASE_URL", "")
	t.Setenv("ROTA_SQS_ENDPOINT", "")
	url := "--database-url=postgres://nowhere.invalid/x"
	cases := []struct {
		args []string
		want string // in the message
	}{
		{[]string{"bench"}, "no database"},
		{[]string{"bench", url, "--workload", "sqs"}, "--workload sqs needs an SQS endpoint"},
		{[]string{"bench", url, "--workload", "drain,sqs"}, "--sqs-endpoint or ROTA_SQS_ENDPOINT"},
		{[]string{"bench", url, "--workload", "sqs", "--sqs-endpoint", "127.0.0.1:4566"}, "want a URL"},
		{[]string{"bench", url, "--workload", "sqs", "--sqs-endpoint", "ftp://h"}, "want a URL"},
		{[]string{"bench", url, "--workload", "frobnicate"}, "want drain, steady, insert, sqs or all"},
		{[]string{"bench", url, "--workload", ""}, "want drain, steady, insert, sqs or all"},
		{[]string{"bench", url, "--tasks", "0"}, "--tasks"},
		{[]string{"bench", url, "--rate", "0"}, "--rate"},
		{[]string{"bench", url, "--rate", "NaN"}, "--rate"},
		{[]string{"bench", url, "--duration", "0s"}, "--duration"},
		{[]string{"bench", url, "--duration", "soon"}, "invalid value"},
		{[]string{"bench", url, "--insert-max", "-1s"}, "--insert-max"},
		{[]string{"bench", url, "--concurrency", "-1"}, "--concurrency"},
		{[]string{"bench", url, "--no-such-flag"}, "no-such-flag"},
		{[]string{"bench", url, "drain"}, "unexpected argument"},
	}
	for _, c := range cases {
		_, err := runCLI(t, c.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rota %s: got %v, want a usage error containing %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

func TestBenchHelp(t *testing.T) {
	out, err := runCLI(t, "bench", "-h")
	if err != nil || !strings.Contains(out, "-in-place") || !strings.Contains(out, "steady") || !strings.Contains(out, "-sqs-endpoint") {
		t.Fatalf("bench -h: %v\n%s", err, out)
	}
}

// The whole command at tiny sizes, in a database of its own: text tables, then JSON.
func TestBenchRuns(t *testing.T) {
	t.Setenv("ROTA_SQS_ENDPOINT", "") // all means the PostgreSQL workloads only
	admin := pgtest.AdminURL(t)
	tiny := []string{"--database-url", admin, "--tasks", "30", "--rate", "100", "--duration", "200ms", "--concurrency", "5"}

	out, err := runCLI(t, append([]string{"bench"}, tiny...)...)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	for _, want := range []string{"created and migrated database rota_bench_", "dropped database rota_bench_",
		"drain: 30 noop tasks", "100%", "pickup", "end-to-end", "EnqueueMany, batch of 1000", "Enqueue, 8 goroutines"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	var stdout, stderr strings.Builder
	err = run(t.Context(), append([]string{"bench", "--json", "--workload", "insert"}, tiny...), &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench --json: %v\n%s", err, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, stdout.String())
	}
	if !rep.Dropped || len(rep.Results) != 1 || rep.Results[0].Workload != "insert" || len(rep.Results[0].Insert) != 4 {
		t.Errorf("report %+v", rep)
	}
	if strings.Contains(stderr.String(), "[") {
		t.Errorf("--json drew progress on stderr:\n%s", stderr.String())
	}
}

// The sqs workload at a tiny size against fauxqs: its table, then its JSON.
func TestBenchSQSRuns(t *testing.T) {
	admin := pgtest.AdminURL(t)
	srv := sqstest.Start(t)
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_SESSION_TOKEN": "", "AWS_REGION": sqstest.Region, "ROTA_SQS_ENDPOINT": srv.Endpoint()} {
		t.Setenv(k, v)
	}
	tiny := []string{"--database-url", admin, "--workload", "sqs", "--tasks", "30", "--concurrency", "5"}

	out, err := runCLI(t, append([]string{"bench"}, tiny...)...)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	for _, want := range []string{"sqs: 30 noop tasks through SQS queue rota-bench-", "at " + srv.Endpoint(),
		"30 claimed, 30 succeeded, 0 errors", "30 sent, 30 received, 30 deleted", "SQS mode drain (tasks)",
		"raw SQS ceiling (messages; batches of 10, 4 clients)", "ratio (drain / ceiling)",
		"µs per task in the drain", "µs per message in the ceiling"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	var stdout, stderr strings.Builder
	if err := run(t.Context(), append([]string{"bench", "--json"}, tiny...), &stdout, &stderr); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, stdout.String())
	}
	if len(rep.Results) != 1 || rep.Results[0].SQS == nil {
		t.Fatalf("report %+v", rep)
	}
	if s := rep.Results[0].SQS; s.Ceiling.MsgsPerSec <= 0 || s.Ratio <= 0 || s.Received != 30 {
		t.Errorf("sqs result %+v", *s)
	}
}
