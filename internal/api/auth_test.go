package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/authlimit"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

func memoryStore(t *testing.T) store.Store {
	st := memory.New()
	t.Cleanup(st.Close)
	return st
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// concrete turns a route pattern into a path it matches.
func concrete(pattern string) string {
	r := strings.NewReplacer("{id}", "0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f", "{queue}", "default", "{name}", "nightly")
	return r.Replace(pattern)
}

// TestTokenIsTrimmed: a configured token read from a secret file keeps its newline;
// requests are compared trimmed, so the token is trimmed too, or the right token would
// be refused (and counted as a wrong guess).
func TestTokenIsTrimmed(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t), Token: "s3cret\n", AuthLimiter: authlimit.New(authlimit.Config{Burst: 1, Every: time.Hour})})
	c.token = "s3cret"
	for range 3 {
		c.do("GET", "/api/stats", nil).want(t, http.StatusOK, nil)
	}
}

func TestTokenProtectsEveryAPIRoute(t *testing.T) {
	const token = "s3cret-token"
	// Hundreds of wrong tokens from one address: a limiter that never runs out, here
	// (TestWrongTokensAreThrottled covers it).
	c := newClient(t, Config{Store: memoryStore(t), Token: token, AuthLimiter: authlimit.New(authlimit.Config{Burst: 1 << 30, Every: time.Nanosecond})})
	routes := c.srv.Routes()
	if len(routes) < 18 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, rt := range routes {
		path := concrete(rt.Pattern)
		if strings.ContainsAny(path, "{}") {
			t.Fatalf("route %s %s: give concrete a value for its wildcard", rt.Method, rt.Pattern)
		}
		for name, auth := range map[string]string{
			"no header":    "",
			"wrong token":  "Bearer not-the-token",
			"prefix":       "Bearer " + token[:5],
			"longer":       "Bearer " + token + "x",
			"wrong scheme": "Basic " + token,
			"bare token":   token,
		} {
			req, _ := http.NewRequest(rt.Method, c.url+path, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			res := c.send(req)
			open := rt.Pattern == "/healthz" || rt.Pattern == "/readyz" || rt.Pattern == "/metrics"
			switch {
			case strings.HasPrefix(rt.Pattern, "/api/") && res.status != http.StatusUnauthorized:
				t.Errorf("%s %s with %s: status %d, want 401", rt.Method, path, name, res.status)
			case strings.HasPrefix(rt.Pattern, "/api/"):
				res.wantError(t, http.StatusUnauthorized, codeUnauthorized)
				if res.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s %s: 401 without WWW-Authenticate", rt.Method, path)
				}
			case open && res.status != http.StatusOK:
				t.Errorf("%s %s with %s: status %d, want 200 (open route)", rt.Method, path, name, res.status)
			}
		}
		// With the token the route is reachable (whatever it answers, not 401).
		if res := c.do(rt.Method, path, "{}"); res.status == http.StatusUnauthorized {
			t.Errorf("%s %s with the token: 401", rt.Method, path)
		}
	}
	// Unknown paths are protected too (no probing of what exists).
	req, _ := http.NewRequest("GET", c.url+"/api/secret-route", nil)
	if res := c.send(req); res.status != http.StatusUnauthorized {
		t.Errorf("unknown path without token: %d", res.status)
	}
	// The scheme is case-insensitive.
	req, _ = http.NewRequest("GET", c.url+"/api/stats", nil)
	req.Header.Set("Authorization", "bearer "+token)
	c.send(req).want(t, http.StatusOK, nil)
}

func TestMetricsAuth(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "m 1") })
	c := newClient(t, Config{Store: memoryStore(t), Token: "t", MetricsAuth: true, MetricsHandler: metrics})
	req, _ := http.NewRequest("GET", c.url+"/metrics", nil)
	c.send(req).wantError(t, http.StatusUnauthorized, codeUnauthorized)
	if res := c.do("GET", "/metrics", nil); res.status != http.StatusOK || string(res.body) != "m 1\n" {
		t.Fatalf("metrics with token: %d %s", res.status, res.body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		req, _ := http.NewRequest("GET", c.url+path, nil)
		c.send(req).want(t, http.StatusOK, nil)
	}
}

// TestOpenAPIMatchesRoutes holds the hand-written document to the routes: the same set
// of (method, path), every operation answering errors with the error schema, and every
// $ref resolving.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t)})
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	res := c.do("GET", "/api/openapi.json", nil)
	res.want(t, http.StatusOK, nil)
	if err := json.Unmarshal(res.body, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	var documented, served []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	for _, rt := range c.srv.Routes() {
		served = append(served, rt.Method+" "+rt.Pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("openapi.json documents %s, which is not served", r)
		}
	}

	// Every $ref points at something that exists.
	var whole any
	if err := json.Unmarshal(res.body, &whole); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if !resolves(whole, ref) {
					t.Errorf("$ref %q does not resolve", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(whole)

	// Every error code the handlers use is in the Error schema's enum.
	schemas := whole.(map[string]any)["components"].(map[string]any)["schemas"].(map[string]any)
	enum := schemas["Error"].(map[string]any)["properties"].(map[string]any)["error"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any)
	for _, code := range []string{codeInvalidRequest, codeInvalidJSON, codeUnauthorized, codeTooManyRequests, codeCrossOrigin,
		codeHostNotAllowed, codeNotFound, codeMethodNotAllowed, codeIllegalTransition, codeLeaseLost, codeConflict,
		codePayloadTooLarge, codeUnsupportedMediaType, codeRequestTimeout, codeInternal, codeUnavailable} {
		if !slices.Contains(enum, any(code)) {
			t.Errorf("error code %q is not documented", code)
		}
	}

	// browserguard's 403 can answer every route but the probes.
	paths := whole.(map[string]any)["paths"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			_, has403 := op.(map[string]any)["responses"].(map[string]any)["403"]
			if probe := path == "/healthz" || path == "/readyz"; has403 == probe {
				t.Errorf("%s %s: documents 403 = %v, want %v", method, path, has403, !probe)
			}
		}
	}

	// The Task schema lists exactly the fields the server sends: a plain task's, and
	// a for_each flow step's (which adds flow_id, step, inputs, item and index).
	task := c.createTask(map[string]any{"kind": "noop"})
	raw := map[string]any{}
	if err := json.Unmarshal(c.do("GET", "/api/tasks/"+task.ID.String(), nil).body, &raw); err != nil {
		t.Fatal(err)
	}
	props := schemas["Task"].(map[string]any)["properties"].(map[string]any)
	for f := range raw {
		if _, ok := props[f]; !ok {
			t.Errorf("task field %q is not in the Task schema", f)
		}
	}
	c.do("POST", "/api/flows", map[string]any{"queue": "schema", "steps": []any{
		map[string]any{"name": "a", "kind": "noop"},
		map[string]any{"name": "b", "kind": "noop", "depends_on": []string{"a"}, "for_each": "a"},
	}}).want(t, http.StatusCreated, nil)
	c.complete(c.claimOne("schema"), `[1]`)
	step := c.claimOne("schema")
	stepRaw := map[string]any{}
	if err := json.Unmarshal(c.do("GET", "/api/tasks/"+step.ID.String(), nil).body, &stepRaw); err != nil {
		t.Fatal(err)
	}
	for f := range stepRaw {
		if _, ok := props[f]; !ok {
			t.Errorf("step task field %q is not in the Task schema", f)
		}
	}
	for f := range props {
		if _, ok := stepRaw[f]; !ok {
			t.Errorf("the Task schema has %q, which the server does not send", f)
		}
	}
}

func resolves(doc any, ref string) bool {
	if !strings.HasPrefix(ref, "#/") {
		return false
	}
	cur := doc
	for _, part := range strings.Split(ref[2:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}

// TestWrongTokensAreThrottled: an address that keeps presenting wrong tokens is refused
// with 429 and Retry-After, even with the right token, until its budget refills;
// requests without a token, and other addresses, are not counted against it.
func TestWrongTokensAreThrottled(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := newClient(t, Config{Store: memoryStore(t), Token: "right", AuthLimiter: authlimit.New(authlimit.Config{Burst: 3, Every: 10 * time.Second, Now: clock})})
	withAuth := func(auth string) response {
		req, _ := http.NewRequest("GET", c.url+"/api/stats", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		return c.send(req)
	}
	for range 5 { // no token at all: not a guess
		withAuth("").wantError(t, http.StatusUnauthorized, codeUnauthorized)
	}
	for range 3 {
		withAuth("Bearer wrong").wantError(t, http.StatusUnauthorized, codeUnauthorized)
	}
	res := withAuth("Bearer right")
	res.wantError(t, http.StatusTooManyRequests, codeTooManyRequests)
	if got := res.header.Get("Retry-After"); got != "10" {
		t.Errorf("Retry-After %q, want 10", got)
	}
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	withAuth("Bearer right").want(t, http.StatusOK, nil)
}

// TestWrongTokensBehindATrustedProxy: behind a proxy listed in TrustedProxies, a guesser
// is told apart from the other clients by the X-Forwarded-For the proxy appends, so it
// blocks only itself.
func TestWrongTokensBehindATrustedProxy(t *testing.T) {
	proxies, err := authlimit.ParsePrefixes("127.0.0.1, ::1") // the test server's clients
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, Config{Store: memoryStore(t), Token: "right",
		AuthLimiter: authlimit.New(authlimit.Config{Burst: 2, Every: time.Hour, TrustedProxies: proxies})})
	via := func(client, auth string) response {
		req, _ := http.NewRequest("GET", c.url+"/api/stats", nil)
		req.Header.Set("Authorization", auth)
		req.Header.Set("X-Forwarded-For", client)
		return c.send(req)
	}
	for range 2 {
		via("203.0.113.5", "Bearer wrong").wantError(t, http.StatusUnauthorized, codeUnauthorized)
	}
	via("203.0.113.5", "Bearer right").wantError(t, http.StatusTooManyRequests, codeTooManyRequests)
	via("203.0.113.6", "Bearer right").want(t, http.StatusOK, nil)
}
