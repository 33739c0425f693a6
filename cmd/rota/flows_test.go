package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/runtime"
)

type flowOut struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Steps  []struct {
		Name    string   `json:"name"`
		Status  string   `json:"status"`
		TaskIDs []string `json:"task_ids"`
	} `json:"steps"`
}

const etlFlowJSON = `{"name": "etl", "idempotency_key": "etl-1", "steps": [
  {"name": "extract", "kind": "noop"},
  {"name": "transform", "kind": "noop", "depends_on": ["extract"], "for_each": "extract"},
  {"name": "load", "kind": "noop", "depends_on": ["transform"]}]}`

// TestFlowCommands: flows start from a file and from standard input, an idempotent start,
// get (human and JSON), list with filters, cancel, replay, and one-line errors.
func TestFlowCommands(t *testing.T) {
	a := newTestAPI(t, "")
	file := filepath.Join(t.TempDir(), "etl.json")
	if err := os.WriteFile(file, []byte(etlFlowJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	f := decode[flowOut](t, a.ok(t, "flows", "start", file, "--json"))
	if f.Status != "RUNNING" || f.Name != "etl" || len(f.Steps) != 3 || f.Steps[0].Status != "PENDING" || f.Steps[1].Status != "WAITING" {
		t.Fatalf("started: %+v", f)
	}
	// The same key again: the same flow, and a note on stderr.
	out, errOut, err := a.cli(t, "flows", "start", file)
	if err != nil || !strings.Contains(out, f.ID) || !strings.Contains(errOut, "already exists") {
		t.Fatalf("second start: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}

	// From standard input.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	oldStdin := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = oldStdin })
	go func() {
		w.WriteString(`{"name": "single", "steps": [{"name": "only", "kind": "noop"}]}`)
		w.Close()
	}()
	g := decode[flowOut](t, a.ok(t, "flows", "start", "-", "--json"))
	os.Stdin = oldStdin
	if g.Name != "single" || g.ID == f.ID {
		t.Fatalf("started from stdin: %+v", g)
	}

	// get: the flow's fields and a table of its steps.
	out = a.ok(t, "flows", "get", f.ID)
	for _, want := range []string{"status:", "RUNNING", "STEP", "extract", "transform", "WAITING", "load"} {
		if !strings.Contains(out, want) {
			t.Errorf("get output lacks %q:\n%s", want, out)
		}
	}
	// list: newest first; filters.
	out = a.ok(t, "flows", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.HasPrefix(lines[1], g.ID) {
		t.Fatalf("list:\n%s", out)
	}
	byName := decode[struct {
		Flows []flowOut `json:"flows"`
	}](t, a.ok(t, "flows", "list", "--name", "etl", "--status", "running", "--json"))
	if len(byName.Flows) != 1 || byName.Flows[0].ID != f.ID {
		t.Fatalf("list --name etl: %+v", byName)
	}

	// cancel, then replay: RUNNING again, with extract's task replayed.
	if c := decode[flowOut](t, a.ok(t, "flows", "cancel", f.ID, "--json")); c.Status != "CANCELED" {
		t.Fatalf("cancel: %+v", c)
	}
	if rp := decode[flowOut](t, a.ok(t, "flows", "replay", f.ID, "--json")); rp.Status != "RUNNING" || rp.Steps[0].Status != "PENDING" {
		t.Fatalf("replay: %+v", rp)
	}
	// A replay of a RUNNING flow is the server's 409, as one line.
	_, _, err = a.cli(t, "flows", "replay", f.ID)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "409") && !strings.Contains(err.Error(), "illegal") {
		t.Fatalf("replay of a running flow: %v", err)
	}

	// An invalid flow: the server's 400 naming the step, one line.
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"steps": [{"name": "a", "kind": "noop", "depends_on": ["ghost"]}]}`), 0o600)
	_, _, err = a.cli(t, "flows", "start", bad)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("start of an invalid flow: %v", err)
	}
}

func TestFlowCommandUsageErrors(t *testing.T) {
	a := newTestAPI(t, "")
	notJSON := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(notJSON, []byte("{nope"), 0o600)
	for _, args := range [][]string{
		{"flows"},
		{"flows", "bogus"},
		{"flows", "start"},
		{"flows", "start", "a.json", "b.json"},
		{"flows", "start", filepath.Join(t.TempDir(), "missing.json")},
		{"flows", "start", notJSON},
		{"flows", "get"},
		{"flows", "get", "not-a-uuid"},
		{"flows", "cancel", "a", "b"},
		{"flows", "list", "--status", "DONE"},
		{"flows", "list", "--limit", "1001"},
		{"flows", "list", "extra"},
	} {
		_, _, err := a.cli(t, args...)
		if !errors.Is(err, errUsage) {
			t.Errorf("rota %s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
	for _, args := range [][]string{{"flows", "help"}, {"flows", "start", "-h"}, {"flows", "get", "--help"}} {
		if _, _, err := a.cli(t, args...); err != nil {
			t.Errorf("rota %s: %v", strings.Join(args, " "), err)
		}
	}
}

// TestFlowStartWait: --wait waits until the flow ended and prints it; a FAILED flow is
// exit 1 naming the failed step; an unserved flow gives up at --wait-timeout, one line.
func TestFlowStartWait(t *testing.T) {
	a := newTestAPI(t, "")
	mux := runtime.NewMux()
	handlers.Register(mux, handlers.Config{})
	w, err := runtime.NewWorker(runtime.Config{Store: a.store, Mux: mux, WorkerID: "w1",
		PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	ok := write("ok.json", `{"steps": [{"name": "a", "kind": "noop"}, {"name": "b", "kind": "noop", "depends_on": ["a"]}]}`)
	f := decode[flowOut](t, a.ok(t, "flows", "start", ok, "--wait", "--json"))
	if f.Status != "SUCCEEDED" || f.Steps[1].Status != "SUCCEEDED" {
		t.Fatalf("--wait printed %+v", f)
	}

	bad := write("bad.json", `{"steps": [{"name": "a", "kind": "fail", "payload": {"permanent": true}},
		{"name": "b", "kind": "noop", "depends_on": ["a"]}]}`)
	out, _, err := a.cli(t, "flows", "start", bad, "--wait")
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "ended FAILED: failed steps: a") || !strings.Contains(out, "CANCELED") {
		t.Fatalf("a failing flow: %v\n%s", err, out)
	}

	lonely := write("lonely.json", `{"queue": "lonely", "steps": [{"name": "a", "kind": "noop"}]}`)
	_, _, err = a.cli(t, "flows", "start", lonely, "--wait", "--wait-timeout", "300ms")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "still RUNNING after --wait-timeout 300ms (a PENDING)") {
		t.Fatalf("an unserved flow: %v", err)
	}
}
