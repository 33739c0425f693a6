package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// syncBuffer is a bytes.Buffer a process writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBinaryAgainstRotaDev builds the real binary with a version set by -ldflags and
// runs it as a user would against a real `rota dev`: exit statuses, stderr lines and
// JSON errors as the shell sees them.
func TestBinaryAgainstRotaDev(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "rota")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v0.0.0-cli-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := []string{"ROTA_SERVER=", "ROTA_ADDR=", "ROTA_API_TOKEN=", "ROTA_DATABASE_URL="}
	type result struct {
		code           int
		stdout, stderr string
	}
	rota := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("run rota %s: %v", strings.Join(args, " "), err)
		}
		return result{cmd.ProcessState.ExitCode(), out.String(), errOut.String()}
	}

	if r := rota("--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "rota v0.0.0-cli-test (go") {
		t.Errorf("rota --version of a binary built with -X main.version: %+v", r)
	}
	if r := rota("migrate", "-h"); r.code != 0 || !strings.Contains(r.stdout, "Usage: rota migrate") || r.stderr != "" {
		t.Errorf("rota migrate -h: %+v", r)
	}
	if r := rota("tasks", "list", "--quue", "x"); r.code != 2 || r.stderr != "rota: tasks list: unknown flag --quue; did you mean --queue? (see 'rota tasks list -h')\n" {
		t.Errorf("rota tasks list --quue: %+v", r)
	}

	dev := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--queues", "default")
	dev.Env = append(os.Environ(), env...)
	var devOut syncBuffer
	dev.Stdout, dev.Stderr = &devOut, &devOut
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Process.Kill(); _ = dev.Wait() })
	listening := regexp.MustCompile(`rota dev listening on (http://\S+)`)
	var server string
	for deadline := time.Now().Add(30 * time.Second); server == ""; {
		if m := listening.FindStringSubmatch(devOut.String()); m != nil {
			server = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("rota dev did not start:\n%s", devOut.String())
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	env = append(env, "ROTA_SERVER="+server)

	if r := rota("enqueue", "noop", "--wait"); r.code != 0 || !strings.Contains(r.stdout, "SUCCEEDED") {
		t.Errorf("enqueue noop --wait with a worker: %+v", r)
	}
	// No worker serves "lonely": the wait ends at its limit and says why.
	r := rota("enqueue", "noop", "--queue", "lonely", "--wait", "--wait-timeout", "1s")
	if r.code != 1 || !strings.Contains(r.stderr, `no worker has claimed it; is a worker serving queue "lonely"`) {
		t.Errorf("enqueue --wait in an unserved queue: %+v", r)
	}
	if r := rota("stats"); r.code != 0 || !regexp.MustCompile(`(?m)^\s*lonely\s+1\s`).MatchString(r.stdout) {
		t.Errorf("rota stats: %+v", r)
	}
	r = rota("tasks", "get", uuid.NewString(), "--json")
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &body); err != nil || r.code != 1 || body.Error.Code != "not_found" {
		t.Errorf("tasks get <unknown> --json: %+v (%v)", r, err)
	}
	if r := rota("dead-letters", "replay", "--task-id", uuid.NewString()); r.code != 1 || !strings.Contains(r.stderr, "no task with id") {
		t.Errorf("dead-letters replay --task-id <unknown>: %+v", r)
	}
	if r := rota("dead-letters", "replay"); r.code != 2 || !strings.Contains(r.stderr, "add --all to confirm") {
		t.Errorf("dead-letters replay without filters: %+v", r)
	}
}
