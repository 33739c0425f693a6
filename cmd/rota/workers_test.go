package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/store"
)

// `rota workers` lists the live workers as a table or JSON; `rota enqueue` prints the
// create answer's warnings on stderr and still creates the task.
func TestWorkersCommandAndEnqueueWarnings(t *testing.T) {
	a := newTestAPI(t, "")
	for _, w := range []store.Worker{
		{ID: "go-1", Host: "box-a", PID: 7, Version: "v1", Mode: "poll", Queues: []string{"default"}, Kinds: []string{"noop", "sleep"}, Concurrency: 100, Running: 2},
		{ID: "py-1", Host: "10.0.0.9", Mode: "http", Queues: []string{"py"}},
	} {
		if err := a.store.RegisterWorker(context.Background(), store.RegisterParams{Worker: w}); err != nil {
			t.Fatal(err)
		}
	}

	out := a.ok(t, "workers")
	for _, want := range []string{"ID", "LAST_SEEN", "go-1", "box-a", "noop,sleep", "2/100", "v1", "py-1", "(unknown)"} {
		if !strings.Contains(out, want) {
			t.Errorf("rota workers lacks %q:\n%s", want, out)
		}
	}
	type listOut struct {
		Workers []struct {
			ID    string   `json:"id"`
			Kinds []string `json:"kinds"`
		} `json:"workers"`
	}
	got := decode[listOut](t, a.ok(t, "workers", "--json", "--queue", "py"))
	if len(got.Workers) != 1 || got.Workers[0].ID != "py-1" || got.Workers[0].Kinds != nil {
		t.Errorf("rota workers --json --queue py: %+v", got)
	}
	if _, _, err := a.cli(t, "workers", "--queue", "-x"); err == nil {
		t.Errorf("a bad --queue must be refused")
	}

	for _, c := range []struct {
		args []string
		want string // "" = no warning
	}{
		{[]string{"enqueue", "noop"}, ""},
		{[]string{"enqueue", "resize"}, `rota: warning: no live worker of queue "default" handles kind "resize"`},
		{[]string{"enqueue", "noop", "--queue", "nobody"}, `rota: warning: queue "nobody" has no live worker`},
		{[]string{"enqueue", "anything", "--queue", "py"}, ""}, // an HTTP worker's kinds are unknown
	} {
		stdout, stderr, err := a.cli(t, c.args...)
		if err != nil || !strings.Contains(stdout, "PENDING") {
			t.Errorf("rota %s: %v; the task must be created all the same:\n%s", strings.Join(c.args, " "), err, stdout)
		}
		if c.want == "" && strings.Contains(stderr, "warning") || !strings.Contains(stderr, c.want) {
			t.Errorf("rota %s: stderr %q, want %q", strings.Join(c.args, " "), stderr, c.want)
		}
	}
}

// A server listening beyond loopback without a token warns at start.
func TestWarnUnprotected(t *testing.T) {
	for _, c := range []struct {
		addr, token string
		warns       bool
	}{
		{"0.0.0.0:0", "", true},
		{"0.0.0.0:0", "secret", false},
		{"127.0.0.1:0", "", false},
	} {
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		warnUnprotected(&buf, ln, c.token)
		ln.Close()
		if got := strings.Contains(buf.String(), "rota: warning: listening on") && strings.Contains(buf.String(), "without a token"); got != c.warns {
			t.Errorf("%s, token %q: warning %q, want warns = %v", c.addr, c.token, buf.String(), c.warns)
		}
	}
}
