package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPythonSDK runs the Python SDK's unittest suite (sdk/python/tests) against a real
// `rota serve` on a fresh PostgreSQL database, with a token (the SDK sends ROTA_API_TOKEN)
// and a short reap interval so that the crash and lease-loss tests see expired leases
// come back within their deadlines.
func TestPythonSDK(t *testing.T) {
	python := requirePython(t)
	dbURL, _ := newDB(t)
	token := randomToken(t)
	url := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0",
		"--token", token, "--reap-interval", "200ms")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "discover", "-s", filepath.Join("..", "sdk", "python", "tests"), "-v")
	cmd.Env = append(os.Environ(), "ROTA_SERVER="+url, "ROTA_API_TOKEN="+token, "ROTA_REQUIRE_INTEGRATION=1",
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest discover -s ../sdk/python/tests -v:\n%s", out)
	if err != nil {
		t.Fatalf("the Python SDK tests failed: %v", err)
	}
	// A suite that skipped its integration tests proves nothing.
	if strings.Contains(string(out), "skipped") {
		t.Fatal("the Python SDK tests skipped some tests")
	}
}

// requirePython finds a python3 of at least 3.11 (the SDK's floor); without one the test
// skips on a developer's machine but fails under CI or ROTA_REQUIRE_INTEGRATION.
func requirePython(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	msg := "the Python SDK tests need python3 >= 3.11 on PATH"
	if err == nil {
		out, verr := exec.Command(path, "-c", "import sys; sys.exit(sys.version_info < (3, 11))").CombinedOutput()
		if verr == nil {
			return path
		}
		msg += ": " + path + " is older (" + strings.TrimSpace(string(out)) + ")"
	}
	if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_INTEGRATION") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestPythonSDKQuickStart runs the two Python blocks of sdk/python/README.md's quick start
// word for word, against `rota dev` as the README says: the enqueue block, then the worker
// block until the tasks it enqueued succeeded, then Ctrl-C (SIGINT to its process group).
func TestPythonSDKQuickStart(t *testing.T) {
	requirePython(t)
	enqueue, worker := pythonReadmeBlock(t, "python-enqueue"), pythonReadmeBlock(t, "python-worker")
	url := startServer(t, "dev", "dev", "--addr", "127.0.0.1:0")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "ROTA_SERVER="+url, "ROTA_API_TOKEN=", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")

	enq := exec.Command("bash", "-euo", "pipefail", "-c", enqueue)
	enq.Dir, enq.Env = root, env
	out, err := enq.CombinedOutput()
	if err != nil {
		t.Fatalf("enqueue block: %v\n%s", err, out)
	}
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "enqueued" {
			ids = append(ids, f[1])
		}
	}
	if len(ids) != 4 {
		t.Fatalf("enqueue block printed %d tasks, want 4:\n%s", len(ids), out)
	}

	var wout strings.Builder
	w := exec.Command("bash", "-euo", "pipefail", "-c", worker)
	w.Dir, w.Env, w.Stdout, w.Stderr = root, env, &wout, &wout
	w.SysProcAttr = newProcessGroup()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	defer func() {
		_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
		t.Logf("worker block output:\n%s", wout.String())
	}()

	c := apiClient{t: t, url: url}
	for _, id := range ids {
		waitFor(t, 60*time.Second, "task "+id+" to succeed", func() (bool, string) {
			status := c.call("GET", "/api/tasks/"+id, nil).str("status")
			return status == "SUCCEEDED", status
		})
	}
	_ = syscall.Kill(-w.Process.Pid, syscall.SIGINT) // Ctrl-C in the terminal
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker block after Ctrl-C: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop within 30s of Ctrl-C")
	}
	if !containsAll(wout.String(), "hello, Ada!", "hello, Grace!", "hello, Linus!", "succeeded on attempt 3", "stopped") {
		t.Fatal("the worker block did not print what the README promises")
	}
}

// pythonReadmeBlock returns the shell block after <!-- quickstart:name --> in sdk/python/README.md.
func pythonReadmeBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "sdk", "python", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- quickstart:" + regexp.QuoteMeta(name) + " -->\\s*```sh\\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("sdk/python/README.md has no quickstart:%s block", name)
	}
	return string(m[1])
}
