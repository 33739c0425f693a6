package main

import (
	"bytes"
	"context"
	"errors"
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
	if out, err := runCLI(t, "migrate", "down", "--steps", "0", "--database-url", url); err != nil {
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
