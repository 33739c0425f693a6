package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
)

func newMux(t *testing.T, cfg Config) *runtime.Mux {
	t.Helper()
	mux := runtime.NewMux()
	Register(mux, cfg)
	return mux
}

func job(kind, payload string, attempt int) *runtime.Job {
	return &runtime.Job{Task: store.Task{
		ID: store.NewID(), Queue: "default", Kind: kind, Payload: json.RawMessage(payload),
		AttemptCount: attempt, MaxAttempts: 25,
	}}
}

// outcome classifies an error the way the worker does.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case runtime.IsPermanent(err):
		return "permanent"
	default:
		return "retry"
	}
}

func TestKinds(t *testing.T) {
	got := newMux(t, Config{}).Kinds()
	if want := []string{"echo", "fail", "http", "noop", "sleep"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
}

func TestEcho(t *testing.T) {
	mux := newMux(t, Config{})
	index := 2
	step := job("echo", `{"n": 1}`, 1)
	step.Task.Inputs, step.Task.Item, step.Task.Index = json.RawMessage(`{"a": [1, 2, "x"]}`), json.RawMessage(`"x"`), &index
	root := job("echo", `{}`, 1)
	root.Task.Inputs = json.RawMessage(`{}`)
	for _, c := range []struct {
		name string
		job  *runtime.Job
		want string
	}{
		{"payload.output", job("echo", `{"output": [1, {"b": 2}], "other": 3}`, 1), `[1,{"b":2}]`},
		{"output null is none", job("echo", `{"output": null}`, 1), ``},
		{"plain task", job("echo", `{"n": 1}`, 1), `{"payload":{"n":1}}`},
		{"no payload", job("echo", ``, 1), `{"payload":{}}`},
		{"root step", root, `{"payload":{},"inputs":{}}`},
		{"for_each step", step, `{"payload":{"n":1},"inputs":{"a":[1,2,"x"]},"item":"x","index":2}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := mux.Work(context.Background(), c.job); err != nil {
				t.Fatal(err)
			}
			if got := string(c.job.Output()); got != c.want {
				t.Errorf("output %s, want %s", got, c.want)
			}
		})
	}
	if err := mux.Work(context.Background(), job("echo", `[1]`, 1)); outcome(err) != "permanent" {
		t.Errorf("a payload that is no object: %v, want a permanent error", err)
	}
}

func TestNoop(t *testing.T) {
	if err := newMux(t, Config{}).Work(context.Background(), job("noop", `{}`, 1)); err != nil {
		t.Fatal(err)
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	mux := newMux(t, Config{})
	start := time.Now()
	if err := mux.Work(context.Background(), job("sleep", `{"ms": 20}`, 1)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("slept %s, want at least 20ms", d)
	}

	// A cancelled context ends the sleep early with a retryable error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := mux.Work(ctx, job("sleep", `{"ms": 3600000}`, 1))
	if !errors.Is(err, context.Canceled) || outcome(err) != "retry" {
		t.Fatalf("cancelled sleep: err = %v", err)
	}

	for _, p := range []string{`{"ms": -1}`, `{"ms": "x"}`, `not json`} {
		if err := mux.Work(context.Background(), job("sleep", p, 1)); outcome(err) != "permanent" {
			t.Errorf("sleep %s: err = %v, want permanent", p, err)
		}
	}
}

func TestFail(t *testing.T) {
	mux := newMux(t, Config{})
	cases := []struct {
		payload string
		attempt int
		want    string
	}{
		{`{"times": 2}`, 1, "retry"},
		{`{"times": 2}`, 2, "retry"},
		{`{"times": 2}`, 3, "ok"},
		{`{"times": 0}`, 1, "ok"},
		{`{"times": 1, "permanent": true}`, 1, "permanent"},
		{`{"times": 1, "permanent": true}`, 2, "ok"},
		{`{}`, 7, "retry"}, // no "times": fails every attempt
		{`{"permanent": true}`, 1, "permanent"},
		{`{"times": "two"}`, 1, "permanent"},
	}
	for _, c := range cases {
		err := mux.Work(context.Background(), job("fail", c.payload, c.attempt))
		if got := outcome(err); got != c.want {
			t.Errorf("fail %s attempt %d: %s (%v), want %s", c.payload, c.attempt, got, err, c.want)
		}
	}
}

func TestParseAllowHosts(t *testing.T) {
	got := ParseAllowHosts(" API.example.com, ,127.0.0.1:8080,*.Internal ,")
	want := []string{"api.example.com", "127.0.0.1:8080", "*.internal"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseAllowHosts = %q, want %q", got, want)
	}
	if got := ParseAllowHosts(""); got != nil {
		t.Fatalf("ParseAllowHosts(\"\") = %q, want nil", got)
	}
}

func TestAllowList(t *testing.T) {
	a := allowList(ParseAllowHosts("api.example.com,127.0.0.1:8080,*.internal,[::1]"))
	for raw, want := range map[string]bool{
		"https://api.example.com/x":      true,
		"https://API.example.com:444/x":  true, // a bare host allows any port
		"http://127.0.0.1:8080/":         true,
		"http://127.0.0.1:9090/":         false, // host:port allows that port only
		"http://svc.internal/":           true,
		"http://a.b.internal:1/":         true,
		"http://internal/":               false,
		"http://evilinternal/":           false,
		"http://[::1]:80/":               true,
		"https://example.com/":           false,
		"https://api.example.com.evil/x": false,
	} {
		u, _ := url.Parse(raw)
		if got := a.check(u) == nil; got != want {
			t.Errorf("check(%s) allowed = %v, want %v", raw, got, want)
		}
	}
	if err := allowList(nil).check(&url.URL{Host: "anything"}); err != nil {
		t.Errorf("empty allow-list: %v", err)
	}
}

// recorded is one request a test server saw.
type recorded struct {
	method, path, body string
	header             http.Header
}

// server returns a test server answering with status (and optional headers), recording
// the requests it sees.
func server(t *testing.T, status int, headers map[string]string) (*httptest.Server, func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var seen []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, recorded{r.Method, r.URL.RequestURI(), string(b), r.Header.Clone()})
		mu.Unlock()
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, "status %d body", status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), seen...)
	}
}

func httpPayloadJSON(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHTTPStatusMapping(t *testing.T) {
	t.Parallel()
	mux := newMux(t, Config{})
	for _, c := range []struct {
		status int
		want   string
	}{
		{200, "ok"}, {201, "ok"}, {204, "ok"},
		{400, "permanent"}, {401, "permanent"}, {404, "permanent"}, {410, "permanent"}, {422, "permanent"},
		{408, "retry"}, {429, "retry"}, {500, "retry"}, {502, "retry"}, {503, "retry"},
		{304, "retry"},
	} {
		srv, _ := server(t, c.status, nil)
		err := mux.Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{"url": srv.URL + "/hook"}), 1))
		if got := outcome(err); got != c.want {
			t.Errorf("status %d: %s (%v), want %s", c.status, got, err, c.want)
		}
		if c.want != "ok" && !strings.Contains(err.Error(), fmt.Sprint(c.status)) {
			t.Errorf("status %d: error %q does not name the status", c.status, err)
		}
	}
}

func TestHTTPRequest(t *testing.T) {
	t.Parallel()
	mux := newMux(t, Config{})
	srv, seen := server(t, 200, nil)

	j := job("http", httpPayloadJSON(t, map[string]any{
		"url":     srv.URL + "/get?x=1",
		"headers": map[string]string{"X-Custom": "yes", "Rota-Attempt": "spoofed"},
	}), 3)
	if err := mux.Work(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	// A JSON body defaults the method to POST and is sent as JSON.
	if err := mux.Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{
		"url": srv.URL + "/post", "body": map[string]any{"a": 1},
	}), 1)); err != nil {
		t.Fatal(err)
	}
	// A string body is sent as is; an explicit method and content type win.
	if err := mux.Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{
		"url": srv.URL + "/put", "method": "put", "body": "a=b&c=d",
		"headers": map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
	}), 1)); err != nil {
		t.Fatal(err)
	}

	reqs := seen()
	if len(reqs) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(reqs))
	}
	get, post, put := reqs[0], reqs[1], reqs[2]
	if get.method != "GET" || get.path != "/get?x=1" || get.body != "" {
		t.Errorf("GET request = %s %s %q", get.method, get.path, get.body)
	}
	if got := get.header.Get("Rota-Task-Id"); got != j.Task.ID.String() {
		t.Errorf("Rota-Task-Id = %q, want %s", got, j.Task.ID)
	}
	if got := get.header.Get("Rota-Attempt"); got != "3" {
		t.Errorf("Rota-Attempt = %q, want 3 (the payload cannot override it)", got)
	}
	if got := get.header.Get("X-Custom"); got != "yes" {
		t.Errorf("X-Custom = %q", got)
	}
	if post.method != "POST" || post.body != `{"a":1}` || post.header.Get("Content-Type") != "application/json" {
		t.Errorf("POST request = %s %q %q", post.method, post.body, post.header.Get("Content-Type"))
	}
	if put.method != "PUT" || put.body != "a=b&c=d" || put.header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("PUT request = %s %q %q", put.method, put.body, put.header.Get("Content-Type"))
	}
}

func TestHTTPBadPayloads(t *testing.T) {
	t.Parallel()
	mux := newMux(t, Config{})
	for _, p := range []string{
		`not json`,
		`[]`,
		`{}`,
		`{"url": ""}`,
		`{"url": "ftp://example.com/x"}`,
		`{"url": "file:///etc/passwd"}`,
		`{"url": "http://"}`,
		`{"url": "://bad"}`,
		`{"url": "http://example.com", "timeout_ms": -5}`,
		`{"url": "http://example.com", "headers": {"a": 1}}`,
		`{"url": "http://example.com", "method": "BAD METHOD"}`,
		`{"url": "http://example.com", "headers": {"X-A": "line\r\nInjected: 1"}}`,
		`{"url": "http://example.com", "headers": {"Bad Name": "v"}}`,
		`{"url": "http://example.com", "headers": {"": "v"}}`,
	} {
		if err := mux.Work(context.Background(), job("http", p, 1)); outcome(err) != "permanent" {
			t.Errorf("payload %s: %s (%v), want permanent", p, outcome(err), err)
		}
	}
}

func TestHTTPAllowHosts(t *testing.T) {
	t.Parallel()
	srv, seen := server(t, 200, nil)
	u, _ := url.Parse(srv.URL)

	allowed := newMux(t, Config{AllowHosts: ParseAllowHosts(u.Host)})
	if err := allowed.Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{"url": srv.URL}), 1)); err != nil {
		t.Fatalf("allowed host: %v", err)
	}

	denied := newMux(t, Config{AllowHosts: []string{"api.example.com"}})
	err := denied.Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{"url": srv.URL}), 1))
	if outcome(err) != "permanent" || !strings.Contains(err.Error(), "not in ROTA_HTTP_ALLOW_HOSTS") {
		t.Fatalf("denied host: %v, want a permanent allow-list error", err)
	}
	if n := len(seen()); n != 1 {
		t.Fatalf("server saw %d requests, want 1 (a denied host is never called)", n)
	}
}

func TestHTTPRedirectToDeniedHost(t *testing.T) {
	t.Parallel()
	target, seen := server(t, 200, nil)
	redirector := httptest.NewServer(http.RedirectHandler(target.URL+"/elsewhere", http.StatusFound))
	t.Cleanup(redirector.Close)
	ru, _ := url.Parse(redirector.URL)

	mux := newMux(t, Config{AllowHosts: []string{ru.Host}})
	err := mux.Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{"url": redirector.URL}), 1))
	if outcome(err) != "permanent" {
		t.Fatalf("redirect to a denied host: %s (%v), want permanent", outcome(err), err)
	}
	if n := len(seen()); n != 0 {
		t.Fatalf("denied redirect target saw %d requests", n)
	}
}

func TestHTTPNetworkError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there now

	err := newMux(t, Config{}).Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{"url": addr + "/?token=secret"}), 1))
	if outcome(err) != "retry" {
		t.Fatalf("network error: %s (%v), want retry", outcome(err), err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error %q leaks the query string", err)
	}
}

func TestHTTPTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	err := newMux(t, Config{}).Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{"url": srv.URL, "timeout_ms": 30}), 1))
	if outcome(err) != "retry" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: %s (%v), want a retryable deadline error", outcome(err), err)
	}
}

func TestHTTPRetryAfter(t *testing.T) {
	t.Parallel()
	srv, _ := server(t, 429, map[string]string{"Retry-After": "7"})
	err := newMux(t, Config{}).Work(context.Background(), job("http", httpPayloadJSON(t, map[string]any{"url": srv.URL}), 1))
	if outcome(err) != "retry" {
		t.Fatalf("429: %s (%v), want retry", outcome(err), err)
	}

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"7":         7 * time.Second,
		"999999999": maxRetryAfter,
		now.Add(time.Minute).Format(http.TimeFormat):  time.Minute,
		now.Add(-time.Minute).Format(http.TimeFormat): 0,
	} {
		if d, ok := retryAfter(v, now); !ok || d != want {
			t.Errorf("retryAfter(%q) = %s, %v; want %s", v, d, ok, want)
		}
	}
	for _, v := range []string{"", "-1", "soon"} {
		if _, ok := retryAfter(v, now); ok {
			t.Errorf("retryAfter(%q) ok, want not", v)
		}
	}

	// A date is read against the server's Date, not this process's clock: a server whose
	// clock is an hour behind asks for 30 s, not for nothing.
	behind := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	h := http.Header{"Date": {behind.Format(http.TimeFormat)}}
	if d, ok := retryAfter(behind.Add(30*time.Second).Format(http.TimeFormat), responseTime(h)); !ok || d != 30*time.Second {
		t.Errorf("Retry-After 30 s past the server's Date = %s, %v; want 30s", d, ok)
	}
	if got := responseTime(http.Header{}); time.Since(got) > time.Minute {
		t.Errorf("responseTime without a Date = %s, want this process's clock", got)
	}
}
