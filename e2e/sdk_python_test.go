package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
