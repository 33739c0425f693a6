package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestMigrateUpDownStatus(t *testing.T) {
	// A database with nothing applied: the template is migrated, so revert it first.
	url := pgtest.NewDatabase(t)
	if out, err := runCLI(t, "migrate", "down", "--steps", "0", "--yes", "--database-url", url); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
	out, err := runCLI(t, "migrate", "status", "--database-url", url)
	if err != nil || !strings.Contains(out, "pending") {
		t.Fatalf("status after down: %v\n%s", err, out)
	}
	out, err = runCLI(t, "migrate", "up", "--database-url", url)
	if err != nil || !strings.Contains(out, "applied 0001") {
		t.Fatalf("up: %v\n%s", err, out)
	}
	out, err = runCLI(t, "migrate", "up", "--database-url", url)
	if err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("second up must be a no-op: %v\n%s", err, out)
	}
	out, err = runCLI(t, "migrate", "status", "--database-url", url)
	if err != nil || strings.Contains(out, "pending") {
		t.Fatalf("status after up: %v\n%s", err, out)
	}
}

// TestProcessesRefuseAnotherSchema: serve (without --migrate) and worker start only on
// the schema this binary was built for; serve --migrate brings a behind one up to date.
func TestProcessesRefuseAnotherSchema(t *testing.T) {
	url := pgtest.NewDatabase(t)
	if out, err := runCLI(t, "migrate", "down", "--steps", "1", "--database-url", url); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"worker", "--database-url", url},
		{"serve", "--database-url", url, "--addr", "127.0.0.1:0"},
	} {
		_, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "is pending") {
			t.Errorf("%s on a schema one migration behind: %v, want a refusal naming the pending migration", args[0], err)
		}
	}

	if out, err := runCLI(t, "migrate", "up", "--database-url", url); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), `INSERT INTO rota.schema_migrations (version, name) VALUES (9999, 'newer_release')`); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"worker", "--database-url", url},
		{"serve", "--database-url", url, "--addr", "127.0.0.1:0", "--migrate"},
	} {
		_, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "ahead of this rota binary") {
			t.Errorf("%s on a schema a newer release migrated: %v, want a refusal", args[0], err)
		}
	}
}

func TestBadInvocationsAreUsageErrors(t *testing.T) {
	t.Setenv("ROTA_DATABASE_URL", "")
	cases := [][]string{
		{"frobnicate"},
		{"migrate"},
		{"migrate", "sideways"},
		{"migrate", "up"}, // no database
		{"migrate", "down", "--steps", "-1", "--database-url", "postgres://x"},
		{"worker", "--mode", "carrier-pigeon"},
		{"worker", "--queues", "default=0"},
		{"worker", "--queues", "a,a"},
		{"worker", "--queues", "bad queue"},
		{"worker", "--log-format", "xml"},
		{"worker", "--concurrency", "-3"},
		{"worker", "--no-such-flag"},
		{"dev", "--trusted-proxies", "proxy.internal"},
		{"serve", "--trusted-proxies", "10.0.0.0/33", "--database-url", "postgres://x"},
	}
	for _, args := range cases {
		_, err := runCLI(t, args...)
		if !errors.Is(err, errUsage) {
			t.Errorf("rota %s: got %v, want a usage error", strings.Join(args, " "), err)
		}
	}
}

func TestEnvBool(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{{"", false}, {"true", true}, {"TRUE", true}, {"1", true}, {"t", true}, {"false", false}, {"0", false}, {"F", false}} {
		t.Setenv("ROTA_TEST_BOOL", tc.value)
		if got, problems := envBool("ROTA_TEST_BOOL", false), envProblems(); got != tc.want || len(problems) != 0 {
			t.Errorf("ROTA_TEST_BOOL=%q: %v (problems %q), want %v", tc.value, got, problems, tc.want)
		}
	}
	t.Setenv("ROTA_TEST_BOOL", "yes")
	if got, problems := envBool("ROTA_TEST_BOOL", true), envProblems(); !got || len(problems) != 1 || !strings.Contains(problems[0], `ROTA_TEST_BOOL="yes" is not a boolean`) {
		t.Errorf("ROTA_TEST_BOOL=yes: %v, problems %q; want the default and one problem", got, problems)
	}
	// Fixed, it is no longer a problem, without anyone forgetting it.
	t.Setenv("ROTA_TEST_BOOL", "true")
	if problems := envProblems(); len(problems) != 0 {
		t.Errorf("after fixing the variable: problems %q", problems)
	}
}

// TestBoolEnvVars: the boolean variables take 1 as true, and a value that is no boolean
// is a usage error (exit 2) before anything starts, never a silent false.
func TestBoolEnvVars(t *testing.T) {
	t.Setenv("ROTA_DATABASE_URL", "postgres://127.0.0.1:1/never-reached")
	t.Setenv("ROTA_API_TOKEN", "")
	// Canceled: a command that got past its checks stops at once instead of serving.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	runEnv := func(name, value string, args ...string) error {
		t.Helper()
		t.Setenv(name, value)
		defer os.Unsetenv(name)
		return run(ctx, args, io.Discard, io.Discard)
	}
	devArgs := []string{"dev", "--addr", "127.0.0.1:0"}

	// ROTA_METRICS_AUTH=1 turns /metrics auth on, so without a token dev refuses to start.
	if err := runEnv("ROTA_METRICS_AUTH", "1", devArgs...); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--metrics-auth needs --token") {
		t.Errorf("ROTA_METRICS_AUTH=1 without a token: %v, want the --metrics-auth usage error", err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"ROTA_METRICS_AUTH", devArgs},
		{"ROTA_MIGRATE", []string{"serve", "--addr", "127.0.0.1:0"}},
		{"ROTA_SQS_CREATE_QUEUES", []string{"worker", "--mode", "sqs"}},
	} {
		err := runEnv(c.name, "yes", c.args...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.name+`="yes" is not a boolean`) {
			t.Errorf("%s=yes rota %s: %v, want a usage error naming the variable", c.name, c.args[0], err)
		}
	}
	// The problem does not stick to the next run in this process.
	if err := run(ctx, devArgs, io.Discard, io.Discard); errors.Is(err, errUsage) {
		t.Errorf("dev after a bad variable was unset: %v", err)
	}
}
