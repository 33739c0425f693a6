package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptSDK builds sdk/typescript and runs its node:test suite (`npm test`)
// against a real `rota serve` on a fresh database: client round trips, worker outcomes,
// cancel, and worker processes killed with SIGKILL, frozen past their lease or stopped
// with SIGTERM. The server reaps every 250ms because the suite's leases are 2 s.
//
// dist/ is not committed: the test runs `npm ci` (only when node_modules is missing or
// older than package-lock.json), then `npm run build` and `npm test`, then the README's
// example. Without node or npm
// it skips, or fails under CI / ROTA_REQUIRE_INTEGRATION.
func TestTypeScriptSDK(t *testing.T) {
	requireNode20(t)
	dir, err := filepath.Abs("../sdk/typescript")
	if err != nil {
		t.Fatal(err)
	}
	dbURL, _ := newDB(t)
	url := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0",
		"--token", apiToken, "--reap-interval", "250ms")

	env := append(os.Environ(), "ROTA_SERVER="+url, "ROTA_API_TOKEN="+apiToken)
	if stale, why := nodeModulesStale(dir); stale {
		t.Logf("npm ci: %s", why)
		runNpm(t, dir, env, 5*time.Minute, "ci", "--no-audit", "--no-fund")
	}
	runNpm(t, dir, env, 2*time.Minute, "run", "build")
	runNpm(t, dir, env, 3*time.Minute, "test")
	runQuickstartExample(t, dir, env)
}

// runQuickstartExample runs examples/quickstart.mjs, which sdk/typescript/README.md
// shows word for word: it enqueues a task, works it and prints that it SUCCEEDED.
func runQuickstartExample(t *testing.T, dir string, env []string) {
	t.Helper()
	example, err := os.ReadFile(filepath.Join(dir, "examples", "quickstart.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```js\n"+string(example)+"```") {
		t.Errorf("sdk/typescript/README.md does not show examples/quickstart.mjs word for word")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "examples/quickstart.mjs")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("node examples/quickstart.mjs:\n%s", out)
	if err != nil || !strings.Contains(string(out), "SUCCEEDED") {
		t.Fatalf("the quick-start example: %v (want it to print SUCCEEDED)", err)
	}
}

// requireNode20 skips the test without node 20.10+ and npm, or fails it when CI or
// ROTA_REQUIRE_INTEGRATION is set: CI must never pass by skipping the SDK.
func requireNode20(t *testing.T) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_INTEGRATION") != "" {
			t.Fatalf(format+" (CI or ROTA_REQUIRE_INTEGRATION is set: the TypeScript SDK tests must not be skipped)", args...)
		}
		t.Skipf(format, args...)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		missing("npm not found: %v", err)
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		missing("node not found: %v", err)
	}
	// npm test uses node --test --test-concurrency, new in Node 20.10.
	version := strings.TrimSpace(string(out))
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	major, _ := strconv.Atoi(parts[0])
	minor := 0
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(parts[1])
	}
	if major < 20 || major == 20 && minor < 10 {
		missing("node %s is older than 20.10", version)
	}
}

// nodeModulesStale reports whether `npm ci` must run: node_modules is missing, or older
// than package-lock.json (npm writes node_modules/.package-lock.json on every install).
func nodeModulesStale(dir string) (bool, string) {
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return true, err.Error()
	}
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil {
		return true, "node_modules is missing"
	}
	if installed.ModTime().Before(lock.ModTime()) {
		return true, "node_modules is older than package-lock.json"
	}
	return false, ""
}

// runNpm runs `npm args...` in dir, logs its output and fails the test if it fails.
func runNpm(t *testing.T, dir string, env []string, timeout time.Duration, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("npm %s (%v):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("npm %s: %v", strings.Join(args, " "), err)
	}
}
