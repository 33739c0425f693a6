package main

// Tests of the command line's manners (issue 15 item 5): version, stats, help, error
// shapes and exit statuses, confirmations, --wait's timeout and notices, flag defaults.

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// mainResult is what a user sees of one invocation: the exit status and both streams.
type mainResult struct {
	code           int
	stdout, stderr string
}

// runMainCLI runs the whole command as main does, exit status included.
func runMainCLI(t *testing.T, args ...string) mainResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runMain(context.Background(), args, &out, &errOut)
	return mainResult{code, out.String(), errOut.String()}
}

// main runs `rota args... --server <url>` as main does.
func (a *testAPI) main(t *testing.T, args ...string) mainResult {
	t.Helper()
	return runMainCLI(t, append(args, "--server", a.url)...)
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		r := runMainCLI(t, args...)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "rota ") || !strings.Contains(r.stdout, goruntime.Version()) {
			t.Errorf("rota %s: %+v, want the version and %s on stdout", args[0], r, goruntime.Version())
		}
	}

	// -ldflags "-X main.version=..." wins over the build information.
	old := version
	version = "v9.8.7"
	defer func() { version = old }()
	if r := runMainCLI(t, "version"); !strings.HasPrefix(r.stdout, "rota v9.8.7 (") {
		t.Errorf("with main.version set: %q", r.stdout)
	}

	for _, tc := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "devel-0123456789ab+dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := versionFromBuildInfo(&tc.info); got != tc.want {
			t.Errorf("versionFromBuildInfo(%+v) = %q, want %q", tc.info.Main, got, tc.want)
		}
	}
}

func TestStats(t *testing.T) {
	a := newTestAPI(t, "")
	makeDead(t, a.store, "beta", "fail", 1, false)
	a.ok(t, "enqueue", "noop", "--queue", "alpha")
	a.ok(t, "enqueue", "noop", "--queue", "alpha")
	a.ok(t, "enqueue", "noop", "--queue", "beta")

	out := a.ok(t, "stats")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "PENDING") || !strings.Contains(lines[0], "DEAD") {
		t.Fatalf("stats table: want a header, two queues and a total:\n%s", out)
	}
	for i, want := range []string{`^\s*alpha\s+2\s+0\s+0\s+0\s+0\s+0\s+0\s`, `^\s*beta\s+1\s+0\s+0\s+0\s+0\s+1\s+0\s`, `^\s*TOTAL\s+3\s+0\s+0\s+0\s+0\s+1\s+0\s`} {
		if !regexp.MustCompile(want).MatchString(lines[i+1]) {
			t.Errorf("stats line %d %q does not match %s", i+1, lines[i+1], want)
		}
	}

	var st struct {
		Queues []struct {
			Queue  string           `json:"queue"`
			Counts map[string]int64 `json:"counts"`
		} `json:"queues"`
		Totals map[string]int64 `json:"totals"`
	}
	if err := json.Unmarshal([]byte(a.ok(t, "stats", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Queues) != 2 || st.Totals["PENDING"] != 3 || st.Totals["DEAD"] != 1 {
		t.Errorf("stats --json: %+v", st)
	}
}

// TestHelpEverywhere: -h and --help on every command and every action print the usage on
// stdout and exit 0 (`rota migrate -h` was an error, and help went to stderr).
func TestHelpEverywhere(t *testing.T) {
	var invocations [][]string
	for _, c := range commands() {
		invocations = append(invocations, []string{c.name})
		r := runMainCLI(t, c.name, "-h")
		// A group lists its actions as "  name  summary" after "Usage: rota <group> <action>".
		if strings.Contains(r.stdout, "<action>") {
			for _, line := range strings.Split(r.stdout, "\n") {
				if f := strings.Fields(line); strings.HasPrefix(line, "  ") && len(f) > 1 {
					invocations = append(invocations, []string{c.name, f[0]})
				}
			}
		}
	}
	for _, action := range []string{"up", "down", "status"} {
		invocations = append(invocations, []string{"migrate", action})
	}
	for _, want := range [][]string{{"tasks", "list"}, {"schedules", "create"}, {"dead-letters", "replay"}, {"tasks", "attempts"}} {
		found := false
		for _, inv := range invocations {
			found = found || strings.Join(inv, " ") == strings.Join(want, " ")
		}
		if !found {
			t.Fatalf("the actions were not found from the groups' help: %q", invocations)
		}
	}
	if r := runMainCLI(t, "help", "tasks", "list"); r.code != 0 || !strings.Contains(r.stdout, "rota tasks list") || !strings.Contains(r.stdout, "-status") {
		t.Errorf("rota help tasks list: %+v; want the usage of tasks list", r)
	}
	for _, inv := range invocations {
		for _, h := range []string{"-h", "--help"} {
			r := runMainCLI(t, append(inv, h)...)
			if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "Usage") {
				t.Errorf("rota %s %s: exit %d, stdout %q, stderr %q; want the usage on stdout and exit 0",
					strings.Join(inv, " "), h, r.code, truncate(r.stdout, 80), r.stderr)
			}
		}
	}
}

// TestUnknownFlagIsOneLine: an unknown flag is one line on stderr (it was printed twice,
// with the whole usage between), with a suggestion, and exit 2.
func TestUnknownFlagIsOneLine(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		suggest string
	}{
		{[]string{"tasks", "list", "--quue", "x"}, "did you mean --queue?"},
		{[]string{"worker", "--concurency", "3"}, "did you mean --concurrency?"},
		{[]string{"enqueue", "noop", "--wiat"}, "did you mean --wait?"},
		{[]string{"migrate", "up", "--databse-url", "postgres://x"}, "did you mean --database-url?"},
		{[]string{"tasks", "list", "--frobnicate"}, ""},
	} {
		r := runMainCLI(t, tc.args...)
		if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "unknown flag") {
			t.Errorf("rota %s: exit %d, stdout %q, stderr %q; want one line and exit 2", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr)
		}
		if tc.suggest != "" && !strings.Contains(r.stderr, tc.suggest) {
			t.Errorf("rota %s: %q lacks %q", strings.Join(tc.args, " "), r.stderr, tc.suggest)
		}
		if tc.suggest == "" && strings.Contains(r.stderr, "did you mean") {
			t.Errorf("rota %s: %q suggests a flag that is nothing like it", strings.Join(tc.args, " "), r.stderr)
		}
	}
}

// TestJSONErrors: with --json a failure is the API's error shape on stderr.
func TestJSONErrors(t *testing.T) {
	a := newTestAPI(t, "")
	type errorBody struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	for _, tc := range []struct {
		args     []string
		exit     int
		code     string
		inMsg    string
		viaMainA bool
	}{
		{[]string{"tasks", "get", uuid.NewString(), "--json"}, 1, "not_found", "", true},
		{[]string{"tasks", "list", "--json", "--status", "nope"}, 2, "usage", "--status", true},
		{[]string{"tasks", "list", "--json", "--quue", "x"}, 2, "usage", "did you mean --queue?", true},
		{[]string{"stats", "--json", "--server", "http://127.0.0.1:1"}, 1, "error", "127.0.0.1:1", false},
	} {
		var r mainResult
		if tc.viaMainA {
			r = a.main(t, tc.args...)
		} else {
			r = runMainCLI(t, tc.args...)
		}
		var body errorBody
		if err := json.Unmarshal([]byte(r.stderr), &body); err != nil || r.code != tc.exit ||
			body.Error.Code != tc.code || !strings.Contains(body.Error.Message, tc.inMsg) || r.stdout != "" {
			t.Errorf("rota %s: exit %d, stderr %q (%v); want exit %d and a JSON error %q containing %q",
				strings.Join(tc.args, " "), r.code, r.stderr, err, tc.exit, tc.code, tc.inMsg)
		}
	}
	// Without --json the error stays one readable line.
	if r := a.main(t, "tasks", "get", uuid.NewString()); r.code != 1 || !strings.HasPrefix(r.stderr, "rota: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("tasks get without --json: %+v", r)
	}
}

// TestTaskIDsThatNameNoTask: every command given a task id that names no task exits 1;
// dead-letters replay still replays the ids that are dead.
func TestTaskIDsThatNameNoTask(t *testing.T) {
	a := newTestAPI(t, "")
	missing := uuid.NewString()
	for _, action := range []string{"get", "cancel", "replay", "attempts"} {
		if r := a.main(t, "tasks", action, missing); r.code != 1 || !strings.Contains(r.stderr, "not_found") {
			t.Errorf("tasks %s <unknown id>: exit %d, stderr %q; want exit 1 and not_found", action, r.code, r.stderr)
		}
	}

	dead := makeDead(t, a.store, "q", "flaky", 1, false)
	r := a.main(t, "dead-letters", "replay", "--task-id", dead[0], "--task-id", missing)
	if r.code != 1 || !strings.Contains(r.stderr, "no task with id "+missing) || !strings.Contains(r.stdout, "replayed 1 task") {
		t.Errorf("dead-letters replay --task-id <dead> --task-id <unknown>: %+v; want the dead one replayed, then exit 1 naming the other", r)
	}
	if got := taskStatusOf(t, a, dead[0]); got != store.StatusPending {
		t.Errorf("the dead task is %s after the replay", got)
	}
	// A task that exists but is not dead is no error: it is left as it is.
	if r := a.main(t, "dead-letters", "replay", "--task-id", dead[0]); r.code != 0 {
		t.Errorf("replaying a PENDING task by id: %+v", r)
	}
}

func taskStatusOf(t *testing.T, a *testAPI, id string) store.Status {
	t.Helper()
	task, err := a.store.GetTask(context.Background(), uuid.MustParse(id))
	if err != nil {
		t.Fatal(err)
	}
	return task.Status
}

// TestBulkReplayNeedsAll: dead-letters replay with no filter replays nothing without --all.
func TestBulkReplayNeedsAll(t *testing.T) {
	a := newTestAPI(t, "")
	dead := makeDead(t, a.store, "q", "flaky", 3, false)
	r := a.main(t, "dead-letters", "replay")
	if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "--all") {
		t.Errorf("dead-letters replay without filters: %+v; want one line naming --all and exit 2", r)
	}
	for _, id := range dead {
		if got := taskStatusOf(t, a, id); got != store.StatusDead {
			t.Fatalf("after the refused replay a task is %s", got)
		}
	}
	if out := a.ok(t, "dead-letters", "replay", "--all"); !strings.Contains(out, "replayed 3 task") {
		t.Errorf("dead-letters replay --all: %s", out)
	}
}

// TestMigrateDownAllNeedsYes: migrate down --steps 0 reverts nothing without --yes.
func TestMigrateDownAllNeedsYes(t *testing.T) {
	url := pgtest.NewDatabase(t)
	r := runMainCLI(t, "migrate", "down", "--steps", "0", "--database-url", url)
	if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "--yes") || r.stdout != "" {
		t.Errorf("migrate down --steps 0: %+v; want one line naming --yes and exit 2", r)
	}
	if out, err := runCLI(t, "migrate", "status", "--database-url", url); err != nil || strings.Contains(out, "pending") {
		t.Fatalf("after the refused down, a migration is pending: %v\n%s", err, out)
	}
	if out, err := runCLI(t, "migrate", "down", "--steps", "0", "--yes", "--database-url", url); err != nil || !strings.Contains(out, "reverted 0001") {
		t.Fatalf("down --steps 0 --yes: %v\n%s", err, out)
	}
}

// TestEnqueueWaitSaysWhy: --wait has a default time limit, and while it waits it says on
// stderr why the task is not finished.
func TestEnqueueWaitSaysWhy(t *testing.T) {
	a := newTestAPI(t, "")
	if r := a.main(t, "enqueue", "-h"); !strings.Contains(r.stdout, "(default 5m0s)") {
		t.Errorf("enqueue -h does not show --wait-timeout's default of 5m:\n%s", r.stdout)
	}

	old := waitNoticeInterval
	waitNoticeInterval = 100 * time.Millisecond
	defer func() { waitNoticeInterval = old }()
	// No worker serves queue "lonely".
	r := a.main(t, "enqueue", "noop", "--queue", "lonely", "--wait", "--wait-timeout", "1500ms")
	if r.code != 1 || !strings.Contains(r.stderr, "after --wait-timeout 1.5s") {
		t.Errorf("--wait in an unserved queue: %+v; want exit 1 at the timeout", r)
	}
	if !strings.Contains(r.stderr, "rota: still PENDING after ") ||
		!strings.Contains(r.stderr, `no worker has claimed it; is a worker serving queue "lonely" with a handler for kind "noop"?`) {
		t.Errorf("--wait does not say why it waits:\n%s", r.stderr)
	}
	// A delayed task says when it is due.
	r = a.main(t, "enqueue", "noop", "--delay", "1h", "--wait", "--wait-timeout", "300ms")
	if r.code != 1 || !strings.Contains(r.stderr, "it is due at ") {
		t.Errorf("--wait on a delayed task: %+v", r)
	}
}

// TestHelpShowsEffectiveDefaults: -h shows the default a flag really has, from its
// environment variable, names the variable, and hides secrets.
func TestHelpShowsEffectiveDefaults(t *testing.T) {
	t.Setenv("ROTA_LEASE", "42s")
	t.Setenv("ROTA_POLL_INTERVAL", "")
	t.Setenv("ROTA_SHUTDOWN_GRACE", "")
	t.Setenv("ROTA_API_TOKEN", "sekrit-token-value")
	t.Setenv("ROTA_DATABASE_URL", "postgres://rota:hunter2@db.example:5432/rota")

	worker := runMainCLI(t, "worker", "-h").stdout
	for _, want := range []string{
		"(ROTA_LEASE) (default 42s)",
		"(ROTA_POLL_INTERVAL) (default 1s)",
		"(ROTA_SHUTDOWN_GRACE) (default 10s)",
		"(ROTA_WORKER_ID)",
		"0 = the runtime default, 1000 (ROTA_CONCURRENCY)",
		`(default "postgres://rota:xxxxx@db.example:5432/rota")`,
	} {
		if !strings.Contains(worker, want) {
			t.Errorf("worker -h lacks %q", want)
		}
	}
	for _, args := range [][]string{{"worker", "-h"}, {"serve", "-h"}, {"dev", "-h"}, {"tasks", "list", "-h"}, {"migrate", "-h"}} {
		out := runMainCLI(t, args...).stdout
		if strings.Contains(out, "sekrit") || strings.Contains(out, "hunter2") {
			t.Errorf("rota %s shows a secret:\n%s", strings.Join(args, " "), out)
		}
	}
	if out := runMainCLI(t, "tasks", "list", "-h").stdout; !strings.Contains(out, `(ROTA_API_TOKEN) (default "(set, hidden)")`) {
		t.Errorf("tasks list -h does not say the token is set:\n%s", out)
	}
}

// TestMissingActionIsOneLine: a group without its action is one usage line naming the
// actions (the whole usage was printed on stderr before the error).
func TestMissingActionIsOneLine(t *testing.T) {
	for _, group := range []string{"tasks", "dead-letters", "schedules", "migrate"} {
		r := runMainCLI(t, group)
		if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "(see 'rota "+group+" -h')") {
			t.Errorf("rota %s: %+v; want one usage line and exit 2", group, r)
		}
	}
}
