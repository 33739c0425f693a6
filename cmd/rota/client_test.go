package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/api"
	"github.com/rotaqueue/rota/internal/dashboard"
	"github.com/rotaqueue/rota/internal/handlers"
	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// The client commands run in-process against the real API on the in-memory store.

type testAPI struct {
	url   string
	store *memory.Store
}

func newTestAPI(t *testing.T, token string) *testAPI {
	t.Helper()
	// The client flags take their defaults from the environment; keep it out.
	t.Setenv("ROTA_SERVER", "")
	t.Setenv("ROTA_ADDR", "")
	t.Setenv("ROTA_API_TOKEN", "")
	st := memory.New()
	t.Cleanup(st.Close)
	srv, err := api.New(api.Config{Store: st, Token: token, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &testAPI{url: hs.URL, store: st}
}

// cli runs `rota args... --server <url>` and returns stdout and stderr apart.
func (a *testAPI) cli(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), append(args, "--server", a.url), &out, &errOut)
	return out.String(), errOut.String(), err
}

// ok runs a command that must succeed and returns its stdout.
func (a *testAPI) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := a.cli(t, args...)
	if err != nil {
		t.Fatalf("rota %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

type taskOut struct {
	ID                string          `json:"id"`
	Queue             string          `json:"queue"`
	Kind              string          `json:"kind"`
	Status            string          `json:"status"`
	Priority          int             `json:"priority"`
	Payload           json.RawMessage `json:"payload"`
	MaxAttempts       int             `json:"max_attempts"`
	ScheduledFor      time.Time       `json:"scheduled_for"`
	IdempotencyKey    *string         `json:"idempotency_key"`
	CancelRequestedAt *time.Time      `json:"cancel_requested_at"`
	LastError         *string         `json:"last_error"`
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not the expected JSON: %v\n%s", err, s)
	}
	return v
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return b.String()
}

func TestEnqueueAndTaskCommands(t *testing.T) {
	a := newTestAPI(t, "")

	// enqueue --json prints the created task.
	task := decode[taskOut](t, a.ok(t, "enqueue", "noop", "--payload", `{"n":1}`, "--queue", "q1",
		"--priority", "3", "--max-attempts", "4", "--delay", "1h", "--json"))
	if task.Status != "PENDING" || task.Queue != "q1" || task.Kind != "noop" || task.Priority != 3 ||
		task.MaxAttempts != 4 || compact(t, task.Payload) != `{"n":1}` {
		t.Fatalf("created task: %+v", task)
	}
	if d := time.Until(task.ScheduledFor); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("--delay 1h scheduled it for %s", task.ScheduledFor)
	}
	if _, err := uuid.Parse(task.ID); err != nil {
		t.Fatalf("id %q: %v", task.ID, err)
	}

	// The human form: one field per line; flags may come after the kind or before it.
	out := a.ok(t, "enqueue", "--at", "2031-05-06T07:08:09Z", "sleep", "--payload", `{"ms":1}`, "--idempotency-key", "k-1")
	for _, want := range []string{"id:", "status:", "PENDING", "kind:", "sleep", "2031-05-06T07:08:09Z", "k-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("enqueue output lacks %q:\n%s", want, out)
		}
	}
	// The same idempotency key returns the same task and says so.
	first := decode[taskOut](t, a.ok(t, "enqueue", "sleep", "--idempotency-key", "k-1", "--json"))
	_, errOut, err := a.cli(t, "enqueue", "sleep", "--idempotency-key", "k-1", "--json")
	if err != nil || !strings.Contains(errOut, "existing task") {
		t.Errorf("idempotency hit: %v, stderr %q", err, errOut)
	}
	if first.IdempotencyKey == nil || *first.IdempotencyKey != "k-1" {
		t.Errorf("idempotency key: %+v", first)
	}

	// tasks get, in both forms and flag orders.
	got := decode[taskOut](t, a.ok(t, "tasks", "get", task.ID, "--json"))
	if got.ID != task.ID || got.Status != "PENDING" {
		t.Errorf("tasks get: %+v", got)
	}
	got = decode[taskOut](t, a.ok(t, "tasks", "get", "--json", task.ID))
	if got.ID != task.ID {
		t.Errorf("tasks get --json first: %+v", got)
	}
	if out := a.ok(t, "tasks", "get", task.ID); !strings.Contains(out, task.ID) || !strings.Contains(out, "0 of 4") {
		t.Errorf("tasks get (human):\n%s", out)
	}

	// tasks list: filters, table, JSON, paging.
	for i := range 3 {
		a.ok(t, "enqueue", "noop", "--queue", "paged", "--payload", fmt.Sprintf(`{"i":%d}`, i))
	}
	type listOut struct {
		Tasks      []taskOut `json:"tasks"`
		NextCursor string    `json:"next_cursor"`
	}
	list := decode[listOut](t, a.ok(t, "tasks", "list", "--queue", "q1", "--json"))
	if len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID || list.NextCursor != "" {
		t.Errorf("tasks list --queue q1: %+v", list)
	}
	list = decode[listOut](t, a.ok(t, "tasks", "list", "--queue", "paged", "--limit", "2", "--json"))
	if len(list.Tasks) != 2 || list.NextCursor == "" {
		t.Fatalf("first page: %+v", list)
	}
	rest := decode[listOut](t, a.ok(t, "tasks", "list", "--queue", "paged", "--limit", "2", "--cursor", list.NextCursor, "--json"))
	if len(rest.Tasks) != 1 || rest.NextCursor != "" {
		t.Errorf("second page: %+v", rest)
	}
	all := decode[listOut](t, a.ok(t, "tasks", "list", "--queue", "paged", "--limit", "1", "--all", "--json"))
	if len(all.Tasks) != 3 || all.NextCursor != "" {
		t.Errorf("--all: %d tasks, cursor %q", len(all.Tasks), all.NextCursor)
	}
	out, errOut, err = a.cli(t, "tasks", "list", "--queue", "paged", "--limit", "2")
	if err != nil || !strings.HasPrefix(out, "ID ") || strings.Count(out, "\n") != 3 || !strings.Contains(errOut, "--cursor") {
		t.Errorf("tasks list (human): %v\n%s\n%s", err, out, errOut)
	}
	list = decode[listOut](t, a.ok(t, "tasks", "list", "--status", "pending,canceled", "--kind", "sleep", "--json"))
	if len(list.Tasks) != 1 || list.Tasks[0].Kind != "sleep" {
		t.Errorf("--status --kind: %+v", list)
	}

	// cancel, replay, attempts.
	canceled := decode[taskOut](t, a.ok(t, "tasks", "cancel", task.ID, "--json"))
	if canceled.Status != "CANCELED" {
		t.Errorf("cancel: %+v", canceled)
	}
	if out := a.ok(t, "tasks", "replay", task.ID); !strings.Contains(out, "PENDING") {
		t.Errorf("replay:\n%s", out)
	}
	type attemptsOut struct {
		Attempts []struct {
			Attempt int    `json:"attempt"`
			Outcome string `json:"outcome"`
		} `json:"attempts"`
	}
	atts := decode[attemptsOut](t, a.ok(t, "tasks", "attempts", task.ID, "--json"))
	if len(atts.Attempts) != 1 || atts.Attempts[0].Outcome != "REPLAYED" {
		t.Errorf("attempts: %+v", atts)
	}
	if out := a.ok(t, "tasks", "attempts", task.ID); !strings.Contains(out, "REPLAYED") || !strings.HasPrefix(out, "ATTEMPT") {
		t.Errorf("attempts (human):\n%s", out)
	}

	// API errors are one readable line and exit 1, not usage errors.
	_, _, err = a.cli(t, "tasks", "replay", task.ID) // PENDING cannot be replayed
	if err == nil || errors.Is(err, errUsage) || !strings.HasPrefix(err.Error(), "illegal_transition: ") {
		t.Errorf("replay of a PENDING task: %v", err)
	}
	missing := uuid.Must(uuid.NewV7()).String()
	_, _, err = a.cli(t, "tasks", "get", missing)
	if err == nil || errors.Is(err, errUsage) || !strings.HasPrefix(err.Error(), "not_found: ") || !strings.Contains(err.Error(), missing) {
		t.Errorf("get of a missing task: %v", err)
	}
}

func TestEnqueueWait(t *testing.T) {
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

	out, errOut, err := a.cli(t, "enqueue", "noop", "--wait", "--json")
	if err != nil {
		t.Fatalf("noop --wait: %v\n%s", err, errOut)
	}
	if got := decode[taskOut](t, out); got.Status != "SUCCEEDED" {
		t.Errorf("noop --wait printed %+v", got)
	}

	out, _, err = a.cli(t, "enqueue", "fail", "--payload", `{"times":5,"permanent":true}`, "--wait")
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "finished FAILED") {
		t.Errorf("a failing task must make --wait fail: %v", err)
	}
	if !strings.Contains(out, "FAILED") {
		t.Errorf("--wait prints the final task:\n%s", out)
	}

	// A task that will not finish in time: --wait-timeout ends the wait with an error.
	_, _, err = a.cli(t, "enqueue", "noop", "--delay", "1h", "--wait", "--wait-timeout", "100ms")
	if err == nil || !strings.Contains(err.Error(), "still PENDING") {
		t.Errorf("--wait-timeout: %v", err)
	}
}

// makeDead creates n tasks in queue and makes them FAILED (permanent) or DEAD (retries
// exhausted), as a worker would.
func makeDead(t *testing.T, st store.Store, queue, kind string, n int, permanent bool) []string {
	t.Helper()
	ctx := context.Background()
	params := make([]store.CreateParams, n)
	for i := range params {
		params[i] = store.CreateParams{Queue: queue, Kind: kind, MaxAttempts: 1}
	}
	if _, err := st.CreateTasks(ctx, params); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: queue, From: store.StatusPending,
		WorkerID: "w-test", Limit: n, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != n {
		t.Fatalf("claim: %d tasks, %v", len(claimed), err)
	}
	outcomes := make([]store.Outcome, n)
	ids := make([]string, n)
	for i, task := range claimed {
		kind := store.Retry
		if permanent {
			kind = store.Fail
		}
		outcomes[i] = store.Outcome{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: kind, Error: "boom"}
		ids[i] = task.ID.String()
	}
	if _, err := st.RecordOutcomes(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestDeadLetters(t *testing.T) {
	a := newTestAPI(t, "")
	failed := makeDead(t, a.store, "dlq", "fail", 25, true)
	dead := makeDead(t, a.store, "other", "flaky", 3, false)

	type dlOut struct {
		DeadLetters []struct {
			TaskID string `json:"task_id"`
			Reason string `json:"reason"`
			Error  string `json:"error"`
		} `json:"dead_letters"`
		NextCursor string `json:"next_cursor"`
	}
	list := decode[dlOut](t, a.ok(t, "dead-letters", "list", "--json"))
	if len(list.DeadLetters) != 28 {
		t.Errorf("dead-letters list: %d events", len(list.DeadLetters))
	}
	list = decode[dlOut](t, a.ok(t, "dead-letters", "list", "--reason", "dead", "--json"))
	if len(list.DeadLetters) != 3 || list.DeadLetters[0].Reason != "DEAD" || list.DeadLetters[0].Error != "boom" {
		t.Errorf("--reason dead: %+v", list)
	}
	out, errOut, err := a.cli(t, "dead-letters", "list", "--queue", "dlq", "--limit", "5")
	if err != nil || !strings.HasPrefix(out, "TASK_ID") || strings.Count(out, "FAILED") != 5 || !strings.Contains(errOut, "--cursor") {
		t.Errorf("dead-letters list (human): %v\n%s\n%s", err, out, errOut)
	}

	// Replay one queue in batches of 10: progress on stderr, a summary on stdout.
	out, errOut, err = a.cli(t, "dead-letters", "replay", "--queue", "dlq", "--batch", "10")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, errOut)
	}
	for _, want := range []string{"replayed 10 of 25...", "replayed 20 of 25...", "replayed 25 of 25..."} {
		if !strings.Contains(errOut, want) {
			t.Errorf("progress lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "replayed 25 task(s)") {
		t.Errorf("summary: %q", out)
	}
	type listOut struct {
		Tasks []taskOut `json:"tasks"`
	}
	if l := decode[listOut](t, a.ok(t, "tasks", "list", "--queue", "dlq", "--status", "FAILED,DEAD", "--json")); len(l.Tasks) != 0 {
		t.Errorf("%d tasks still dead after replay", len(l.Tasks))
	}
	if l := decode[listOut](t, a.ok(t, "tasks", "list", "--queue", "dlq", "--status", "PENDING", "--all", "--json")); len(l.Tasks) != len(failed) {
		t.Errorf("%d tasks PENDING after replay, want %d", len(l.Tasks), len(failed))
	}
	// Nothing left to replay there.
	if out := a.ok(t, "dead-letters", "replay", "--queue", "dlq"); !strings.Contains(out, "nothing replayed") {
		t.Errorf("second replay: %q", out)
	}

	// By id, with a JSON summary; one id that is not dead is left alone.
	type summary struct {
		Replayed int      `json:"replayed"`
		Matched  int      `json:"matched"`
		Calls    int      `json:"calls"`
		TaskIDs  []string `json:"task_ids"`
	}
	s := decode[summary](t, a.ok(t, "dead-letters", "replay", "--task-id", dead[0], "--task-id", dead[1]+","+failed[0], "--json"))
	if s.Replayed != 2 || s.Matched != 3 || len(s.TaskIDs) != 2 {
		t.Errorf("replay by id: %+v", s)
	}
	// By kind (counted by listing): the last DEAD task.
	out, errOut, err = a.cli(t, "dead-letters", "replay", "--kind", "flaky", "--reason", "DEAD")
	if err != nil || !strings.Contains(errOut, "replayed 1 of 1...") || !strings.Contains(out, "replayed 1 task(s)") {
		t.Errorf("replay --kind: %v\n%s\n%s", err, out, errOut)
	}
}

// A replayed task that dies again at once must not make the bulk replay loop forever: it
// stops at the count it took at the start.
func TestDeadLettersReplayStopsAtTheCount(t *testing.T) {
	a := newTestAPI(t, "")
	makeDead(t, a.store, "loop", "fail", 4, true)
	var replayCalls atomic.Int64
	// A proxy that, after every replay call, makes the replayed tasks FAILED again, as a
	// fast worker running a permanently failing kind would.
	upstream, _ := http.NewRequest("GET", a.url, nil)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		target := *r.URL
		target.Scheme, target.Host = upstream.URL.Scheme, upstream.URL.Host
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target.String(), r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		io.Copy(rec, resp.Body)
		if r.URL.Path == "/api/dead-letters/replay" {
			replayCalls.Add(1)
			makeDeadAgain(t, a.store, "loop")
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(rec.Body.Bytes())
	}))
	defer proxy.Close()

	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"dead-letters", "replay", "--queue", "loop", "--batch", "2", "--server", proxy.URL}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if n := replayCalls.Load(); n != 2 {
		t.Errorf("%d replay calls, want 2 (4 tasks in batches of 2)\n%s", n, errOut.String())
	}
}

// TestDeadLettersReplayGoesOnPastTasksSharingAKey: a call that replays less than a full
// batch because two dead tasks share an idempotency key (only the older is replayed) is
// not the end: the CLI goes on until a call replays nothing.
func TestDeadLettersReplayGoesOnPastTasksSharingAKey(t *testing.T) {
	a := newTestAPI(t, "")
	dieWithKey := func() {
		if _, err := a.store.CreateTasks(context.Background(), []store.CreateParams{
			{Queue: "keys", Kind: "k", MaxAttempts: 1, IdempotencyKey: "once"}}); err != nil {
			t.Fatal(err)
		}
		makeDeadAgain(t, a.store, "keys")
	}
	dieWithKey() // the older
	dieWithKey() // the younger, created once the older's death freed the key
	makeDead(t, a.store, "keys", "k", 3, true)
	out, errOut, err := a.cli(t, "dead-letters", "replay", "--queue", "keys", "--batch", "2")
	if err != nil || !strings.Contains(out, "replayed 4 task(s)") {
		t.Fatalf("replay: %v\n%s\n%s", err, out, errOut)
	}
}

// makeDeadAgain claims every PENDING task of queue and fails it permanently.
func makeDeadAgain(t *testing.T, st store.Store, queue string) {
	ctx := context.Background()
	claimed, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: queue, From: store.StatusPending,
		WorkerID: "w-again", Limit: 100, LeaseDuration: time.Minute})
	if err != nil {
		t.Error(err)
		return
	}
	for _, task := range claimed {
		if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: task.ID, LeaseToken: task.LeaseToken, Kind: store.Fail, Error: "again"}}); err != nil {
			t.Error(err)
		}
	}
}

func TestClientToken(t *testing.T) {
	a := newTestAPI(t, "s3cret")

	_, _, err := a.cli(t, "tasks", "list")
	if err == nil || errors.Is(err, errUsage) || !strings.HasPrefix(err.Error(), "unauthorized") ||
		!strings.Contains(err.Error(), "--token or set ROTA_API_TOKEN") {
		t.Errorf("no token: %v", err)
	}
	_, _, err = a.cli(t, "tasks", "list", "--token", "wrong")
	if err == nil || !strings.Contains(err.Error(), "refused the token") {
		t.Errorf("wrong token: %v", err)
	}
	a.ok(t, "enqueue", "noop", "--token", "s3cret")
	t.Setenv("ROTA_API_TOKEN", "s3cret")
	if out := a.ok(t, "tasks", "list"); !strings.Contains(out, "noop") {
		t.Errorf("ROTA_API_TOKEN: %s", out)
	}
}

// TestTokenWhitespace: a token from a secret file keeps its newline; server and client
// drop it. A token with whitespace or a control character inside is a usage error that
// names the token (and does not show it), on both sides.
func TestTokenWhitespace(t *testing.T) {
	a := newTestAPI(t, "s3cret")
	t.Setenv("ROTA_API_TOKEN", "s3cret\n")
	a.ok(t, "tasks", "list")
	for _, bad := range []string{"s3 cret", "s3\tcret", "s3\x00cret", " "} {
		_, _, err := a.cli(t, "tasks", "list", "--token", bad)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--token (ROTA_API_TOKEN)") {
			t.Errorf("client, --token %q: %v, want a usage error about the token", bad, err)
		}
		_, err = runCLI(t, "dev", "--addr", "127.0.0.1:0", "--token", bad)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--token (ROTA_API_TOKEN)") || (strings.TrimSpace(bad) != "" && strings.Contains(err.Error(), bad)) {
			t.Errorf("dev, --token %q: %v, want a usage error about the token", bad, err)
		}
	}
	t.Setenv("ROTA_API_TOKEN", "s3 cret")
	if _, err := runCLI(t, "serve", "--addr", "127.0.0.1:0"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--token (ROTA_API_TOKEN)") {
		t.Errorf("serve, ROTA_API_TOKEN with a space: %v, want a usage error about the token", err)
	}

	t.Setenv("ROTA_API_TOKEN", "s3cret\n")
	f := registerServerFlags(newFlagSet("serve", io.Discard))
	if err := f.check(); err != nil || *f.token != "s3cret" {
		t.Errorf("server token %q, %v; want it trimmed", *f.token, err)
	}
}

// Bad input is a usage error (exit 2) found before any request is sent.
func TestClientUsageErrors(t *testing.T) {
	t.Setenv("ROTA_SERVER", "")
	t.Setenv("ROTA_API_TOKEN", "")
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no request expected", http.StatusTeapot)
	}))
	defer srv.Close()
	id := uuid.Must(uuid.NewV7()).String()
	cases := [][]string{
		{"enqueue"},
		{"enqueue", "noop", "extra"},
		{"enqueue", "bad kind!"},
		{"enqueue", "noop", "--queue", "bad queue"},
		{"enqueue", "noop", "--payload", "{not json"},
		{"enqueue", "noop", "--payload", "{}", "--payload-file", "x.json"},
		{"enqueue", "noop", "--payload-file", "/nonexistent/payload.json"},
		{"enqueue", "noop", "--delay", "-5s"},
		{"enqueue", "noop", "--delay", "5s", "--at", "2030-01-01T00:00:00Z"},
		{"enqueue", "noop", "--at", "tomorrow"},
		{"enqueue", "noop", "--at", "0001-01-01T00:00:00Z"},
		{"enqueue", "noop", "--max-attempts", "-1"},
		{"enqueue", "noop", "--timeout-seconds", "-1"},
		{"enqueue", "noop", "--wait-timeout", "5s"},
		{"enqueue", "noop", "--timeout", "-1s"},
		{"enqueue", "noop", "--bogus"},
		{"tasks"},
		{"tasks", "frob"},
		{"tasks", "get"},
		{"tasks", "get", "not-a-uuid"},
		{"tasks", "get", id, id},
		{"tasks", "cancel"},
		{"tasks", "replay", "123"},
		{"tasks", "attempts"},
		{"tasks", "list", "--status", "BOGUS"},
		{"tasks", "list", "--limit", "5000"},
		{"tasks", "list", "extra"},
		{"tasks", "list", "--queue", "\x00"},
		{"tasks", "list", "--kind", "bad kind"},
		{"dead-letters"},
		{"dead-letters", "purge"},
		{"dead-letters", "list", "--reason", "CANCELED"},
		{"dead-letters", "list", "--limit", "-1"},
		{"dead-letters", "list", "--kind", "\xff"},
		{"dead-letters", "replay", "--queue", "\x00"},
		{"dead-letters", "replay", "--batch", "0"},
		{"dead-letters", "replay", "--batch", "1001"},
		{"dead-letters", "replay", "--task-id", "nope"},
		{"dead-letters", "replay", "--reason", "x"},
		{"dead-letters", "replay", id},
	}
	for _, args := range cases {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append(args, "--server", srv.URL), &out, &errOut)
		if !errors.Is(err, errUsage) {
			t.Errorf("rota %s: got %v, want a usage error", strings.Join(args, " "), err)
		}
	}
	for _, server := range []string{"ftp://example.com", "http://", "http://x/?a=b", ""} {
		err := run(context.Background(), []string{"tasks", "list", "--server", server}, io.Discard, io.Discard)
		if !errors.Is(err, errUsage) {
			t.Errorf("--server %q: got %v, want a usage error", server, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
}

func TestUnreachableServer(t *testing.T) {
	t.Setenv("ROTA_API_TOKEN", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = run(context.Background(), []string{"tasks", "get", uuid.NewString(), "--server", addr}, io.Discard, io.Discard)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "cannot reach the Rota server at http://"+addr) {
		t.Errorf("got %v", err)
	}
}

func TestDefaultServer(t *testing.T) {
	cases := []struct{ server, addr, want string }{
		{"", "", "http://127.0.0.1:8080"},
		{"", "127.0.0.1:9000", "http://127.0.0.1:9000"},
		{"", ":9001", "http://127.0.0.1:9001"},
		{"", "0.0.0.0:9002", "http://127.0.0.1:9002"},
		{"", "[::]:9003", "http://127.0.0.1:9003"},
		{"https://rota.example.com/", "127.0.0.1:9000", "https://rota.example.com/"},
	}
	for _, tc := range cases {
		t.Setenv("ROTA_SERVER", tc.server)
		t.Setenv("ROTA_ADDR", tc.addr)
		if got := defaultServer(); got != tc.want {
			t.Errorf("ROTA_SERVER=%q ROTA_ADDR=%q: got %q, want %q", tc.server, tc.addr, got, tc.want)
		}
	}
	for in, want := range map[string]string{
		"localhost:8080":          "http://localhost:8080",
		"http://h:1/":             "http://h:1",
		"https://h/rota/":         "https://h/rota",
		" http://127.0.0.1:8080 ": "http://127.0.0.1:8080",
	} {
		if got, err := normalizeServer(in); err != nil || got != want {
			t.Errorf("normalizeServer(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	fs := newFlagSet("x", io.Discard)
	j := fs.Bool("json", false, "")
	q := fs.String("queue", "", "")
	pos, err := parseArgs(fs, []string{"a", "--json", "b", "--queue", "q", "--", "--not-a-flag"})
	if err != nil || *j != true || *q != "q" || strings.Join(pos, " ") != "a b --not-a-flag" {
		t.Errorf("got %q %v json=%v queue=%q", pos, err, *j, *q)
	}
}

// TestClientWithWrongBaseURL: a --server whose path is not the Rota server's base URL
// reaches the dashboard, whose HTML answers become one readable line with a hint.
func TestClientWithWrongBaseURL(t *testing.T) {
	a := newTestAPI(t, "")
	dash, err := dashboard.New(dashboard.Config{Store: a.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Store: a.store, Dashboard: dash, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	a.url = hs.URL + "/prefix"

	id := uuid.Must(uuid.NewV7()).String()
	for _, args := range [][]string{{"tasks", "list"}, {"tasks", "cancel", id}, {"dead-letters", "replay", "--queue", "q"}} {
		_, _, err := a.cli(t, args...)
		if err == nil {
			t.Fatalf("%v: no error", args)
		}
		msg := err.Error()
		if !strings.Contains(msg, "HTTP 404 Not Found from "+a.url) || !strings.HasSuffix(msg, "is --server the Rota server's base URL?") ||
			strings.ContainsAny(msg, "<\n") {
			t.Errorf("%v: %q, want one line with the status, the server and a hint", args, msg)
		}
	}
}

// TestTasksGetShowsOutput: `rota tasks get` shows a task's output, in both forms.
func TestTasksGetShowsOutput(t *testing.T) {
	a := newTestAPI(t, "")
	task := decode[taskOut](t, a.ok(t, "enqueue", "noop", "--queue", "outs", "--json"))
	ctx := context.Background()
	claimed, err := a.store.ClaimTasks(ctx, store.ClaimParams{Queue: "outs", From: store.StatusPending, WorkerID: "w", Limit: 1, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %d", err, len(claimed))
	}
	if _, err := a.store.RecordOutcomes(ctx, []store.Outcome{{TaskID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken,
		Kind: store.Succeed, Output: json.RawMessage(`{"rows":3}`)}}); err != nil {
		t.Fatal(err)
	}
	out := a.ok(t, "tasks", "get", task.ID)
	if !strings.Contains(out, "output:") || !strings.Contains(out, `{"rows":3}`) {
		t.Errorf("tasks get (human) lacks the output:\n%s", out)
	}
	var got struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(a.ok(t, "tasks", "get", task.ID, "--json")), &got); err != nil || compact(t, got.Output) != `{"rows":3}` {
		t.Errorf("tasks get --json: output %s (%v)", got.Output, err)
	}
}

// TestListPages: one page without --all, every page with it, and no items on an error.
func TestListPages(t *testing.T) {
	pages := map[string]struct {
		items []int
		next  string
	}{"": {[]int{1, 2}, "b"}, "b": {[]int{3}, "c"}, "c": {[]int{4}, ""}}
	reader := func(failAt string) func() ([]int, string, error) {
		cursor := ""
		return func() ([]int, string, error) {
			if cursor == failAt {
				return nil, "", errors.New("boom")
			}
			p := pages[cursor]
			cursor = p.next
			return p.items, p.next, nil
		}
	}
	if items, next, err := listPages(false, reader("none")); err != nil || !slices.Equal(items, []int{1, 2}) || next != "b" {
		t.Errorf("one page: %v %q %v, want [1 2] \"b\"", items, next, err)
	}
	if items, next, err := listPages(true, reader("none")); err != nil || !slices.Equal(items, []int{1, 2, 3, 4}) || next != "" {
		t.Errorf("every page: %v %q %v, want [1 2 3 4] \"\"", items, next, err)
	}
	if items, _, err := listPages(true, reader("c")); err == nil || items != nil {
		t.Errorf("an error on the last page: %v %v, want no items and the error", items, err)
	}
}
