package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/store"
)

// deadTask makes a task DEAD through the worker protocol and returns its id.
func (c *apiClient) deadTask() string {
	c.t.Helper()
	task := c.createTask(map[string]any{"kind": "k", "max_attempts": 1})
	cl := c.claimOne("default")
	c.do("POST", "/api/tasks/"+task.ID.String()+"/fail", map[string]any{"lease_token": cl.LeaseToken, "error": "x"}).
		want(c.t, http.StatusOK, nil)
	return task.ID.String()
}

// TestCrossSiteBrowserRequestsAreRefused: a page on another site cannot make a visitor's
// browser change anything through the API, with or without a token (the quick start has
// none), even with a body-less POST that skips the Content-Type check. Programs, which
// send neither Sec-Fetch-Site nor Origin, and same-origin requests pass.
func TestCrossSiteBrowserRequestsAreRefused(t *testing.T) {
	for _, token := range []string{"", "t0ken"} {
		c := newClient(t, Config{Store: memoryStore(t), Token: token})
		id := c.deadTask()
		crossSite := func(method, path string, header, value string) response {
			req, _ := http.NewRequest(method, c.url+path, nil)
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set(header, value)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			return c.send(req)
		}
		for _, rt := range c.srv.Routes() {
			if rt.Method == http.MethodGet {
				continue
			}
			for header, value := range map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"} {
				e := crossSite(rt.Method, concrete(rt.Pattern), header, value).wantError(t, http.StatusForbidden, codeCrossOrigin)
				if !strings.Contains(e.Message, "cross-site") {
					t.Errorf("message %q", e.Message)
				}
			}
		}
		if got := c.getTask(id); got.Status != store.StatusDead {
			t.Fatalf("token %q: the task is %s after cross-site replays, want DEAD", token, got.Status)
		}
		// Reading stays open to a cross-site GET (a browser does not let the page read the answer).
		crossSite("GET", "/api/stats", "Sec-Fetch-Site", "cross-site").want(t, http.StatusOK, nil)
		// Same-origin, and a program without those headers, go through.
		crossSite("POST", "/api/dead-letters/replay", "Sec-Fetch-Site", "same-origin").want(t, http.StatusOK, nil)
		if got := c.getTask(id); got.Status != store.StatusPending {
			t.Fatalf("token %q: the task is %s after a same-origin replay, want PENDING", token, got.Status)
		}
		c.do("POST", "/api/tasks/"+id+"/cancel", nil).want(t, http.StatusOK, nil)
	}
}

// TestHostRuleWithoutToken: without a token the server answers only requests addressed
// to an IP address or localhost, so a DNS-rebinding page (same-origin to the browser,
// its own name in Host) gets nothing; the probes answer any name, and a token turns the
// rule off.
func TestHostRuleWithoutToken(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t)})
	withHost := func(token, method, path, host string) response {
		req, _ := http.NewRequest(method, c.url+path, nil)
		req.Host = host
		req.Header.Set("Sec-Fetch-Site", "same-origin") // what a rebinding page's browser sends
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return c.send(req)
	}
	for _, path := range []string{"/api/tasks", "/api/openapi.json", "/api/no-such-route", "/metrics"} {
		for _, method := range []string{"GET", "POST"} {
			e := withHost("", method, path, "rebind.example:8080").wantError(t, http.StatusForbidden, codeHostNotAllowed)
			if !strings.Contains(e.Message, "ROTA_API_TOKEN") || !strings.Contains(e.Message, `"rebind.example:8080"`) {
				t.Errorf("message %q: want the host and what to do", e.Message)
			}
		}
	}
	for _, host := range []string{"127.0.0.1", "127.0.0.1:8080", "localhost:8080", "[::1]:8080", "192.0.2.10"} {
		withHost("", "GET", "/api/stats", host).want(t, http.StatusOK, nil)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		withHost("", "GET", path, "rota.internal:8080").want(t, http.StatusOK, nil)
	}

	tc := newClient(t, Config{Store: memoryStore(t), Token: "t0ken"})
	req, _ := http.NewRequest("GET", tc.url+"/api/stats", nil)
	req.Host = "rota.example.com"
	req.Header.Set("Authorization", "Bearer t0ken")
	tc.send(req).want(t, http.StatusOK, nil)
}
