package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// liveWorker returns the worker id of GET /api/workers, or nil when it is not listed.
func liveWorker(c apiClient, id string) map[string]any {
	for _, w := range c.call("GET", "/api/workers", nil).expect(c.t, "list workers", 200, "").list("workers") {
		if m, _ := w.(map[string]any); m["id"] == id {
			return m
		}
	}
	return nil
}

// Real `rota worker` processes register in the workers registry and heartbeat there: a
// worker shows in GET /api/workers with its pid, queues and the built-in kinds; a task
// of a kind none of them handles is created with a warning; a gracefully stopped worker
// leaves the list at once; a SIGKILLed one, which cannot say goodbye, drops out once it
// has been unseen for 30 s (the default expiry; heartbeats every 10 s).
func TestWorkersRegistryWithRealProcesses(t *testing.T) {
	dbURL, _ := newDB(t)
	url := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--log-level", "warn")
	c := apiClient{t: t, url: url}
	worker := func(id string) *proc {
		return startProc(t, id, nil, "worker", "--database-url", dbURL, "--worker-id", id,
			"--queues", "images", "--log-level", "warn")
	}
	killed, stopped := worker("e2e-killed"), worker("e2e-stopped")

	var w map[string]any
	waitFor(t, 30*time.Second, "both workers listed", func() (bool, string) {
		w = liveWorker(c, "e2e-killed")
		return w != nil && liveWorker(c, "e2e-stopped") != nil, fmt.Sprint(w)
	})
	var kinds []string
	for _, k := range w["kinds"].([]any) {
		kinds = append(kinds, k.(string))
	}
	if w["mode"] != "poll" || int(w["pid"].(float64)) != killed.cmd.Process.Pid || fmt.Sprint(w["queues"]) != "[images]" ||
		!slices.Contains(kinds, "noop") || !slices.Contains(kinds, "http") || w["host"] == "" || w["version"] == "" {
		t.Errorf("registered worker = %v", w)
	}

	created := c.call("POST", "/api/tasks", map[string]any{"kind": "resize", "queue": "images"}).expect(t, "create", 201, "")
	if ws := created.list("warnings"); len(ws) != 1 || !strings.Contains(ws[0].(string), `handles kind "resize"`) {
		t.Errorf("a kind no live worker handles: warnings %v", ws)
	}

	stopped.stop(t, 15*time.Second)
	if liveWorker(c, "e2e-stopped") != nil {
		t.Errorf("a gracefully stopped worker is still listed")
	}

	killed.kill()
	start := time.Now()
	if liveWorker(c, "e2e-killed") == nil {
		t.Fatalf("a killed worker vanished at once: only expiry should remove it")
	}
	waitFor(t, 60*time.Second, "the killed worker to expire", func() (bool, string) {
		return liveWorker(c, "e2e-killed") == nil, ""
	})
	t.Logf("the SIGKILLed worker left GET /api/workers %s after the kill", time.Since(start).Round(100*time.Millisecond))

	created = c.call("POST", "/api/tasks", map[string]any{"kind": "noop", "queue": "images"}).expect(t, "create", 201, "")
	if ws := created.list("warnings"); len(ws) != 1 || !strings.Contains(ws[0].(string), `queue "images" has no live worker`) {
		t.Errorf("no live worker left: warnings %v", ws)
	}
}

// The browser scenarios of the workers registry (workersScenarios in
// tools/browser/dashboard.mjs) photograph these pages too; TestDashboardBrowser checks them.
func init() {
	dashboardScreenshots = append(dashboardScreenshots, "workers", "unserved-queue")
}
