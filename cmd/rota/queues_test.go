package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

type rateOut struct {
	Limit      int `json:"limit"`
	PerSeconds int `json:"per_seconds"`
}

type queueOut struct {
	Name             string           `json:"name"`
	Paused           bool             `json:"paused"`
	Concurrency      *int             `json:"concurrency"`
	Rate             *rateOut         `json:"rate"`
	GroupConcurrency *int             `json:"group_concurrency"`
	GroupRate        *rateOut         `json:"group_rate"`
	Counts           map[string]int64 `json:"counts"`
	Workers          int              `json:"workers"`
}

func TestQueueCommands(t *testing.T) {
	a := newTestAPI(t, "")

	// enqueue --group-key: shown in both forms.
	task := decode[struct {
		GroupKey *string `json:"group_key"`
	}](t, a.ok(t, "enqueue", "noop", "--queue", "mail", "--group-key", "tenant-1", "--json"))
	if task.GroupKey == nil || *task.GroupKey != "tenant-1" {
		t.Fatalf("enqueue --group-key: %v", task.GroupKey)
	}
	if out := a.ok(t, "enqueue", "noop", "--queue", "mail", "--group-key", "tenant-2"); !strings.Contains(out, "group_key:") || !strings.Contains(out, "tenant-2") {
		t.Errorf("enqueue output lacks the group key:\n%s", out)
	}

	// set: every limit, the JSON form.
	q := decode[queueOut](t, a.ok(t, "queues", "set", "mail", "--concurrency", "5", "--rate", "100/1s",
		"--group-concurrency", "1", "--group-rate", "10/60", "--json"))
	if q.Name != "mail" || *q.Concurrency != 5 || *q.Rate != (rateOut{100, 1}) || *q.GroupConcurrency != 1 ||
		*q.GroupRate != (rateOut{10, 60}) || q.Paused || q.Counts["PENDING"] != 2 {
		t.Fatalf("set: %+v", q)
	}
	// none removes one limit and keeps the others.
	q = decode[queueOut](t, a.ok(t, "queues", "set", "mail", "--rate", "none", "--json"))
	if q.Rate != nil || q.Concurrency == nil || *q.Concurrency != 5 {
		t.Fatalf("set --rate none: %+v", q)
	}

	// pause and resume, the human form.
	out := a.ok(t, "queues", "pause", "mail")
	for _, want := range []string{"name:", "mail", "paused:", "true", "concurrency:", "5", "rate:", "none", "group_rate:", "10/60s", "PENDING 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("pause output lacks %q:\n%s", want, out)
		}
	}
	if q := decode[queueOut](t, a.ok(t, "queues", "get", "mail", "--json")); !q.Paused {
		t.Errorf("get after pause: %+v", q)
	}
	if q := decode[queueOut](t, a.ok(t, "queues", "resume", "mail", "--json")); q.Paused {
		t.Errorf("resume: %+v", q)
	}
	if q := decode[queueOut](t, a.ok(t, "queues", "set", "mail", "--paused", "--json")); !q.Paused {
		t.Errorf("set --paused: %+v", q)
	}

	// A queue with no tasks and no settings answers with the defaults.
	if q := decode[queueOut](t, a.ok(t, "queues", "get", "empty", "--json")); q.Paused || q.Concurrency != nil || q.Rate != nil {
		t.Errorf("get of an unknown queue: %+v", q)
	}
	a.ok(t, "queues", "set", "other", "--group-concurrency", "3")

	// list: a table, by name, or JSON.
	out = a.ok(t, "queues", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "QUEUE ") || !strings.HasPrefix(lines[1], "mail ") || !strings.HasPrefix(lines[2], "other ") {
		t.Fatalf("list:\n%s", out)
	}
	for _, want := range []string{"true", "5", "none", "10/60s"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("list row of mail lacks %q: %s", want, lines[1])
		}
	}
	l := decode[struct {
		Queues []queueOut `json:"queues"`
	}](t, a.ok(t, "queues", "list", "--json"))
	if len(l.Queues) != 2 || l.Queues[1].Name != "other" || *l.Queues[1].GroupConcurrency != 3 {
		t.Errorf("list --json: %+v", l)
	}

	// A limit out of range is refused before any request.
	_, errOut, err := a.cli(t, "queues", "set", "mail", "--concurrency", "2000000")
	if !errors.Is(err, errUsage) {
		t.Errorf("--concurrency 2000000: %v (%s)", err, errOut)
	}
}

func TestQueueUsageErrors(t *testing.T) {
	a := newTestAPI(t, "")
	for _, args := range [][]string{
		{"queues"},
		{"queues", "frob"},
		{"queues", "get"},
		{"queues", "get", "bad queue"},
		{"queues", "get", "a", "b"},
		{"queues", "set", "mail"},
		{"queues", "set", "mail", "--json"},
		{"queues", "set", "mail", "--concurrency", "0"},
		{"queues", "set", "mail", "--concurrency", "five"},
		{"queues", "set", "mail", "--rate", "100"},
		{"queues", "set", "mail", "--rate", "100/0s"},
		{"queues", "set", "mail", "--rate", "0/1s"},
		{"queues", "set", "mail", "--group-rate", "1/x"},
		{"queues", "set", "mail", "--paused", "--resumed"},
		{"queues", "pause"},
		{"enqueue", "noop", "--group-key", strings.Repeat("k", 129)},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append(args, "--server", a.url), &out, &errOut)
		if !errors.Is(err, errUsage) {
			t.Errorf("rota %s: got %v, want a usage error", strings.Join(args, " "), err)
		} else if msg := err.Error(); strings.Contains(msg, "\n") {
			t.Errorf("rota %s: the error is more than one line: %q", strings.Join(args, " "), msg)
		}
	}
}
