package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/testio"
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
	queues := readmeBlock(t, "queues")
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

	// The flow-control block: its last line lists the queue it configured.
	cmd = exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", queues)
	cmd.Dir, cmd.Env = root, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's queues block failed: %v\n%s", err, out)
	} else if !regexp.MustCompile(`(?m)^emails +false +5 +none +1 +none `).Match(out) {
		t.Fatalf("the queues block did not list emails resumed with concurrency 5, no rate, group concurrency 1:\n%s", out)
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

// TestReadmeFlowsBlock runs the README's flows block word for word in the repository
// root, with ./rota built by the quick start's own build command, against `rota dev`
// (the quick start's server; ROTA_SERVER points the block's client commands at it): the
// ETL flow must end SUCCEEDED with one transform task per extracted file and load's
// inputs holding the three transform outputs in file order.
func TestReadmeFlowsBlock(t *testing.T) {
	block := readmeBlock(t, "flows")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	buildReadmeRota(t, root)
	url := startServer(t, "dev", "dev", "--addr", "127.0.0.1:0")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = root
	cmd.Env = append(withoutEnv(os.Environ(), "ROTA_"), "ROTA_SERVER="+url)
	cmd.WaitDelay = 5 * time.Second // a killed bash leaves ./rota holding the output pipe
	out, err := cmd.CombinedOutput()
	t.Logf("flows block output:\n%s", out)
	if err != nil {
		t.Fatalf("the README's flows block failed: %v", err)
	}

	api := apiClient{t: t, url: url}
	flows := api.call("GET", "/api/flows?name=etl", nil).expect(t, "list flows", http.StatusOK, "").list("flows")
	if len(flows) != 1 {
		t.Fatalf("GET /api/flows?name=etl: %d flows, want 1", len(flows))
	}
	id, _ := flows[0].(map[string]any)["id"].(string)
	if !strings.Contains(string(out), id) {
		t.Errorf("the block's output does not show flow %s", id)
	}
	var flow struct {
		Status string `json:"status"`
		Steps  []struct {
			Name    string          `json:"name"`
			Status  string          `json:"status"`
			TaskIDs []string        `json:"task_ids"`
			Output  json.RawMessage `json:"output"`
		} `json:"steps"`
	}
	got := api.call("GET", "/api/flows/"+id, nil).expect(t, "get flow", http.StatusOK, "")
	if err := json.Unmarshal([]byte(got.raw), &flow); err != nil {
		t.Fatal(err)
	}
	if flow.Status != "SUCCEEDED" || len(flow.Steps) != 3 || len(flow.Steps[1].TaskIDs) != 3 {
		t.Fatalf("flow %s: %s", id, got.raw)
	}
	var load struct {
		Inputs struct {
			Transform []struct {
				Item  string `json:"item"`
				Index int    `json:"index"`
			} `json:"transform"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal(flow.Steps[2].Output, &load); err != nil {
		t.Fatalf("load's output %s: %v", flow.Steps[2].Output, err)
	}
	files := []string{"a.csv", "b.csv", "c.csv"}
	if len(load.Inputs.Transform) != len(files) {
		t.Fatalf("load's inputs hold %d transform outputs, want 3: %s", len(load.Inputs.Transform), flow.Steps[2].Output)
	}
	for i, tr := range load.Inputs.Transform {
		if tr.Item != files[i] || tr.Index != i {
			t.Errorf("transform output %d is for %q (index %d), want %q", i, tr.Item, tr.Index, files[i])
		}
	}
}

// TestReadmeSQSBlock runs the README's SQS-mode block word for word in the repository
// root, with ./rota built by the quick start's own build command and the environment the
// block's prose assumes: ROTA_DATABASE_URL of a migrated database and AWS credentials
// (static test ones; fauxqs checks none). Only where SQS and the API live differ from a
// reader's machine: ROTA_SQS_ENDPOINT is a fresh fauxqs and ROTA_ADDR a free port.
// Tasks created through the server's API in both queues the block names must run once
// each through SQS, and a permanent failure must reach the block's dead-letter queue.
func TestReadmeSQSBlock(t *testing.T) {
	block := readmeBlock(t, "sqs")
	// The queue names below are the block's; if it changes them, this test must follow.
	for _, setting := range []string{"ROTA_QUEUES=default,emails", "ROTA_SQS_QUEUE=rota", "ROTA_SQS_DLQ=rota-dlq"} {
		if !strings.Contains(block, setting) {
			t.Fatalf("the sqs block no longer sets %s; update this test", setting)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	buildReadmeRota(t, root)

	r := newSQSRig(t)
	r.queue, r.dlq = "rota", "rota-dlq"
	addr := freeAddr(t)
	env := append(withoutEnv(os.Environ(), "ROTA_", "AWS_"),
		"ROTA_DATABASE_URL="+r.dbURL, "ROTA_SQS_ENDPOINT="+r.sqs.Endpoint(), "ROTA_ADDR="+addr,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test")
	run := startReadmeBlock(t, root, env, block)

	api := apiClient{t: t, url: "http://" + addr}
	waitFor(t, time.Minute, "rota serve to answer /healthz", func() (bool, string) {
		if run.exited() {
			t.Fatalf("the sqs block exited:\n%s", run.output())
		}
		resp, err := http.Get(api.url + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})

	want := map[uuid.UUID]string{}
	create := func(body map[string]any, status store.Status) {
		t.Helper()
		created := api.call("POST", "/api/tasks", body).expect(t, fmt.Sprint("create ", body), http.StatusCreated, "")
		id, err := uuid.Parse(created.str("id"))
		if err != nil {
			t.Fatalf("created task: %s", created.raw)
		}
		want[id] = string(status)
	}
	create(map[string]any{"kind": "noop"}, store.StatusSucceeded)
	create(map[string]any{"kind": "noop", "queue": "emails"}, store.StatusSucceeded)
	create(map[string]any{"kind": "fail", "queue": "emails", "payload": map[string]any{"permanent": true}, "max_attempts": 5},
		store.StatusFailed)

	r.waitStatuses(2*time.Minute, map[string]int{"SUCCEEDED": 2, "FAILED": 1})
	// Each Rota queue had its own SQS queue, named as the README says, and every message
	// was deleted.
	r.waitQueueEmpty(r.queueURL("rota"), time.Minute)
	r.waitQueueEmpty(r.queueURL("rota-emails"), time.Minute)
	tallies := r.assertFinal(want)
	for id, k := range tallies {
		if k.attemptCount != 1 {
			t.Errorf("task %s (%s) took %d attempts, want 1", id, want[id], k.attemptCount)
		}
	}
	for _, e := range receiveDeadTaskEvents(t, r, r.queueURL("rota-dlq"), 1) {
		checkDeadTaskEvent(t, r, e, want)
		if e.Queue != "emails" || e.Reason != string(store.StatusFailed) {
			t.Errorf("DLQ event %+v, want the FAILED task of queue emails", e)
		}
	}
	run.stop(t, 30*time.Second)
}

// buildReadmeRota runs the quick start's build command (the server block before its
// "&&") in root, so that ./rota is what a reader of the README has built.
func buildReadmeRota(t *testing.T, root string) {
	t.Helper()
	build, _, ok := strings.Cut(readmeBlock(t, "server"), " && ")
	if !ok || !strings.Contains(build, "go build") {
		t.Fatalf("the server block no longer starts with a go build command joined by &&; update this test")
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", build)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the quick start's build %q failed: %v\n%s", build, err, out)
	}
}

// withoutEnv drops the variables whose names start with one of prefixes, so that the
// developer's own settings cannot change what a README block does.
func withoutEnv(env []string, prefixes ...string) []string {
	var out []string
	for _, kv := range env {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			out = append(out, kv)
		}
	}
	return out
}

// readmeRun is a README block running under bash in a process group of its own.
type readmeRun struct {
	cmd  *exec.Cmd
	out  *testio.LockedBuffer
	done chan struct{} // closed when bash and everything holding its output are gone
}

// startReadmeBlock runs block with `bash -euo pipefail -c` in dir. Its processes are
// killed when t ends, if stop did not end them first.
func startReadmeBlock(t *testing.T, dir string, env []string, block string) *readmeRun {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = newProcessGroup()
	out := &testio.LockedBuffer{}
	// Not an *os.File: Wait returns only once every process that inherited the output
	// (the block's background jobs too) has closed it.
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &readmeRun{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		if !r.exited() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
		if t.Failed() {
			t.Logf("README block output:\n%s", r.output())
		}
	})
	return r
}

func (r *readmeRun) output() string { return r.out.String() }

func (r *readmeRun) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the block's process group, as Ctrl-C in its terminal would end
// it, and fails t unless every process is gone within d.
func (r *readmeRun) stop(t *testing.T, d time.Duration) {
	t.Helper()
	stopProcessGroup(r.cmd)
	select {
	case <-r.done:
	case <-time.After(d):
		t.Errorf("the README block's processes did not exit within %v of SIGTERM", d)
	}
}
