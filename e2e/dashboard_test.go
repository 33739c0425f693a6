package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"html/template"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
)

// The pages tools/browser/dashboard.mjs photographs, one PNG each.
var dashboardScreenshots = []string{"login", "overview", "tasks", "task", "dead-letters", "schedules", "schedule"}

// The replay confirmation, the runs of a replayed task and the Queues page (issue 15).
func init() {
	dashboardScreenshots = append(dashboardScreenshots, "replay-confirm", "task-attempts-runs", "queues")
}

// A paused queue with limits on the Queues page (issue 14).
func init() {
	dashboardScreenshots = append(dashboardScreenshots, "queues-limited")
}

// The Flows list and a flow's graph after its steps turned SUCCEEDED live (issue 13).
func init() {
	dashboardScreenshots = append(dashboardScreenshots, "flows", "flow")
}

// browserFlowQueue is the queue of the flow the browser watches: no `rota worker` serves
// it, the script itself claims and completes its tasks over the HTTP worker protocol.
const browserFlowQueue = "browser-flow"

// createBrowserFlow starts extract -> transform (for_each over extract) -> load, the flow
// whose page the script watches; it has no flow API yet to do it itself.
func createBrowserFlow(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	res, err := postgres.New(pool).CreateFlow(context.Background(), store.FlowParams{Name: "browser-etl", Queue: browserFlowQueue,
		Steps: []store.StepParams{
			{Name: "extract", Kind: "extract"},
			{Name: "transform", Kind: "transform", DependsOn: []string{"extract"}, ForEach: "extract"},
			{Name: "load", Kind: "load", DependsOn: []string{"transform"}},
		}})
	if err != nil {
		t.Fatalf("CreateFlow: %v", err)
	}
	return res.Flow.ID.String()
}

// TestDashboardBrowser runs the dashboard's browser scenarios (tools/browser/dashboard.mjs,
// playwright-core driving Debian's headless Chromium) against a real `rota serve` on
// PostgreSQL with a token. The script checks the pages and the API as it goes; this test
// serves the cross-site page and starts the worker when the script asks, then checks the
// screenshots and, in the database, that the refused requests changed nothing.
func TestDashboardBrowser(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	requireBrowserTools(t, root)

	dbURL, pool := newDB(t)
	token := randomToken(t)
	url := startServer(t, "serve", "serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--token", token, "--log-level", "warn")
	flowID := createBrowserFlow(t, pool)
	fixture := newDashboardFixture()
	srv := httptest.NewServer(fixture)
	defer srv.Close()

	// Screenshots go to $ROTA_ARTIFACTS_DIR/dashboard (relative: from the repository's root).
	artifacts := os.Getenv("ROTA_ARTIFACTS_DIR")
	if artifacts == "" {
		artifacts = "artifacts"
	}
	if !filepath.IsAbs(artifacts) {
		artifacts = filepath.Join(root, artifacts)
	}
	shots := filepath.Join(artifacts, "dashboard")
	for _, name := range append(dashboardScreenshots, "failure") {
		// A previous run's pictures must not pass for this run's.
		if err := os.Remove(filepath.Join(shots, name+".png")); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "dashboard.mjs")
	node.Dir = filepath.Join(root, "tools", "browser")
	node.Env = append(os.Environ(), "ROTA_URL="+url, "ROTA_TOKEN="+token,
		"ROTA_FIXTURE_URL="+srv.URL, "ROTA_ARTIFACTS_DIR="+artifacts,
		"ROTA_FLOW_ID="+flowID, "ROTA_FLOW_QUEUE="+browserFlowQueue)
	// SIGTERM first: playwright then closes Chromium instead of leaving it behind.
	node.Cancel = func() error { return node.Process.Signal(syscall.SIGTERM) }
	node.WaitDelay = 15 * time.Second
	var out bytes.Buffer // one writer for both: exec serialises the writes
	node.Stdout, node.Stderr = &out, &out
	if err := node.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- node.Wait() }()

	var worker *proc
	for running := true; running; {
		select {
		case reply := <-fixture.workerRequests:
			if worker == nil {
				worker = startProc(t, "worker", nil, "worker", "--mode", "poll", "--database-url", dbURL,
					"--queues", "default", "--poll-interval", "200ms", "--log-level", "warn")
			}
			close(reply)
		case err = <-done:
			running = false
		}
	}
	if err != nil {
		t.Fatalf("browser scenarios failed (%v); screenshots in %s\n%s", err, shots, out.String())
	}
	t.Logf("browser scenarios:\n%s", out.String())
	if worker == nil {
		t.Fatal("the scenarios never asked for the worker")
	}

	checkScreenshots(t, shots)
	checkDashboardEffects(t, pool)
}

// requireBrowserTools skips the test on a developer's machine without node, Chromium or
// tools/browser's npm packages, and fails it in CI, where scripts/test.sh provisions them.
func requireBrowserTools(t *testing.T, root string) {
	t.Helper()
	chromium := os.Getenv("ROTA_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	if _, err := os.Stat(chromium); err != nil {
		missing = append(missing, chromium)
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "browser", "node_modules", "playwright-core", "package.json")); err != nil {
		missing = append(missing, "tools/browser/node_modules (npm ci)")
	}
	if len(missing) == 0 {
		return
	}
	msg := "browser tests need " + strings.Join(missing, ", ") + ": run scripts/browser.sh"
	if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_INTEGRATION") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// checkScreenshots: one decodable, non-empty PNG per page.
func checkScreenshots(t *testing.T, dir string) {
	t.Helper()
	for _, name := range dashboardScreenshots {
		path := filepath.Join(dir, name+".png")
		f, err := os.Open(path)
		if err != nil {
			t.Errorf("screenshot of the %s page: %v", name, err)
			continue
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width == 0 || cfg.Height == 0 {
			t.Errorf("%s is not a usable PNG: %v (%dx%d)", path, err, cfg.Width, cfg.Height)
		}
	}
}

// checkDashboardEffects reads in the database what the scenarios did and did not do: the
// forged cancels changed nothing, the replay is recorded, the schedule is enabled again.
func checkDashboardEffects(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	count := func(what, query string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, query).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	if n := count("canceled tasks", `SELECT count(*) FROM rota.tasks WHERE status = 'CANCELED' OR cancel_requested_at IS NOT NULL`); n != 0 {
		t.Errorf("%d tasks canceled or asked to cancel: a refused request went through", n)
	}
	if n := count("pending guarded tasks", `SELECT count(*) FROM rota.tasks WHERE queue = 'guarded' AND status = 'PENDING'`); n != 1 {
		t.Errorf("%d PENDING tasks in queue guarded, want the 1 the forged requests targeted", n)
	}
	if n := count("succeeded sleep tasks", `SELECT count(*) FROM rota.tasks WHERE kind = 'sleep' AND status = 'SUCCEEDED'`); n != 1 {
		t.Errorf("%d SUCCEEDED sleep tasks, want 1", n)
	}
	if n := count("replays", `SELECT count(*) FROM rota.task_attempts a JOIN rota.tasks t ON t.id = a.task_id
		WHERE t.kind = 'fail' AND NOT t.payload ? 'bulk' AND a.outcome = 'REPLAYED'`); n != 2 {
		t.Errorf("%d REPLAYED events on the first fail task, want 2 (its page's replay and the replay of every dead task)", n)
	}
	checkBulkReplay(t, pool)
	if n := count("succeeded flow", `SELECT count(*) FROM rota.flows WHERE name = 'browser-etl' AND status = 'SUCCEEDED'`); n != 1 {
		t.Errorf("flow browser-etl is not SUCCEEDED after the script worked its steps")
	}
	if n := count("enabled schedule", `SELECT count(*) FROM rota.schedules WHERE name = 'dashboard-nightly-report' AND enabled`); n != 1 {
		t.Errorf("schedule dashboard-nightly-report is not enabled after pause and resume")
	}
}

// dashboardFixture is the other origin of the browser tests: GET /cross-site serves a page
// that at once posts a form to the dashboard (a forged request from another site), and
// POST /start-worker asks the test to start a `rota worker`, answering once it runs.
type dashboardFixture struct {
	workerRequests chan chan struct{}
	mux            *http.ServeMux
}

var crossSitePage = template.Must(template.New("cross-site").Parse(`<!doctype html>
<title>Another site</title>
<form id="forged" method="POST" action="{{.Action}}">
{{if .CSRF}}<input type="hidden" name="csrf" value="{{.CSRF}}">{{end}}
</form>
<script>document.getElementById("forged").submit()</script>
`))

func newDashboardFixture() *dashboardFixture {
	f := &dashboardFixture{workerRequests: make(chan chan struct{}), mux: http.NewServeMux()}
	f.mux.HandleFunc("GET /cross-site", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = crossSitePage.Execute(w, struct{ Action, CSRF string }{r.URL.Query().Get("action"), r.URL.Query().Get("csrf")})
	})
	f.mux.HandleFunc("POST /start-worker", func(w http.ResponseWriter, r *http.Request) {
		started := make(chan struct{})
		select {
		case f.workerRequests <- started:
		case <-r.Context().Done():
			return
		}
		select {
		case <-started:
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	})
	return f
}

func (f *dashboardFixture) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.mux.ServeHTTP(w, r) }

// checkBulkReplay: the confirmed replay of every dead task replayed each bulk task once
// (and the confirmation page before it, nothing).
func checkBulkReplay(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var tasks, replays int
	err := pool.QueryRow(context.Background(), `SELECT count(DISTINCT t.id), count(a.id) FROM rota.tasks t
		LEFT JOIN rota.task_attempts a ON a.task_id = t.id AND a.outcome = 'REPLAYED'
		WHERE t.kind = 'fail' AND t.payload ? 'bulk'`).Scan(&tasks, &replays)
	if err != nil {
		t.Fatalf("bulk replays: %v", err)
	}
	if tasks != 2 || replays != 2 {
		t.Errorf("%d bulk tasks with %d REPLAYED events, want 2 with one each", tasks, replays)
	}
}
