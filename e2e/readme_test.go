package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeBlock returns the shell block that follows the marker <!-- quickstart:name -->
// in the README.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- quickstart:" + name + " -->\\s*```sh\\n(.*?)```")
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("README has no quickstart:%s block", name)
	}
	return string(m[1])
}

// TestReadmeQuickStart runs the README's quick start word for word: the server block in
// the repository root (it builds ./rota and starts `rota dev`), then the client block,
// and checks that both tasks succeeded. Only the port differs: the test picks a free
// one with ROTA_ADDR (which rota dev and the client commands both read) and points the
// curl line at it.
func TestReadmeQuickStart(t *testing.T) {
	server, client, schedules := readmeBlock(t, "server"), readmeBlock(t, "client"), readmeBlock(t, "schedules")
	const readmeURL = "http://127.0.0.1:8080"
	if !strings.Contains(client, readmeURL) {
		t.Fatalf("the client block no longer calls %s; update this test", readmeURL)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	env := append(os.Environ(), "ROTA_ADDR="+addr, "ROTA_SERVER=", "ROTA_API_TOKEN=")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", server)
	srv.Dir, srv.Env = root, env
	// The server's own process group, so that stopping it stops ./rota too.
	srv.SysProcAttr = newProcessGroup()
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stopProcessGroup(srv)
		_ = srv.Wait()
		if t.Failed() {
			t.Logf("rota dev stderr:\n%s", stderr.String())
		}
	}()

	// The README promises the URL line.
	lines := bufio.NewScanner(stdout)
	printed := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "rota dev listening on ") {
				printed <- strings.TrimPrefix(lines.Text(), "rota dev listening on ")
			}
		}
	}()
	var url string
	select {
	case url = <-printed:
	case <-time.After(2 * time.Minute): // includes the go build
		t.Fatal("rota dev never printed 'rota dev listening on ...'")
	}
	if url != "http://"+addr {
		t.Fatalf("rota dev listens on %s, want http://%s", url, addr)
	}

	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", strings.ReplaceAll(client, readmeURL, url))
	cmd.Dir, cmd.Env = root, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's client block failed: %v\n%s", err, out)
	}
	t.Logf("client block output:\n%s", out)

	// The schedules block, against the same server.
	cmd = exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", schedules)
	cmd.Dir, cmd.Env = root, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's schedules block failed: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "nightly-report") {
		t.Fatalf("the schedules block printed no schedule:\n%s", out)
	}

	// The curl task and the enqueue --wait task both end SUCCEEDED.
	waitFor(t, 30*time.Second, "both quick-start tasks to succeed", func() (bool, string) {
		resp, err := http.Get(url + "/api/tasks?status=SUCCEEDED")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var body struct {
			Tasks []struct{ Kind string } `json:"tasks"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return false, err.Error()
		}
		kinds := map[string]bool{}
		for _, task := range body.Tasks {
			kinds[task.Kind] = true
		}
		return kinds["sleep"] && kinds["noop"], "succeeded kinds so far: " + strings.Join(keys(kinds), ",")
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
