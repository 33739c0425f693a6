package dashboard

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
	"github.com/rotaqueue/rota/internal/testutil/poll"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newDashboard(t *testing.T, cfg Config) *Dashboard {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

// browser sends requests straight to a handler and keeps cookies as a browser would
// (HttpOnly or not; a Max-Age below zero deletes).
type browser struct {
	t       *testing.T
	h       http.Handler
	mu      sync.Mutex
	cookies map[string]*http.Cookie
	tls     bool
	header  http.Header // added to every request
	host    string      // the Host of every request: where the user pointed the browser
}

func newBrowser(t *testing.T, h http.Handler) *browser {
	return &browser{t: t, h: h, cookies: map[string]*http.Cookie{}, header: http.Header{}, host: testHost}
}

// testHost is the address the browsers of the tests use (httptest.NewRequest's default,
// example.com, is a DNS name, which a dashboard without a token refuses).
const testHost = "127.0.0.1:8080"

type page struct {
	status     int
	header     http.Header
	body       string
	setCookies []*http.Cookie
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	b.mu.Lock()
	for _, c := range b.cookies {
		req.AddCookie(c)
	}
	b.mu.Unlock()
	for k, vs := range b.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if b.tls {
		req.TLS = &tls.ConnectionState{}
	}
	req.Host = b.host
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	b.mu.Lock()
	for _, c := range res.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	b.mu.Unlock()
	return page{status: res.StatusCode, header: res.Header, body: string(body), setCookies: res.Cookies()}
}

func (b *browser) get(path string) page {
	b.t.Helper()
	return b.do(httptest.NewRequest(http.MethodGet, path, nil))
}

// partial fetches path as the live-update script does.
func (b *browser) partial(path string) page {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set(partialHeader, "1")
	return b.do(req)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// submit posts form to path with the csrf field of the page at from (as a form on that
// page would, with back = from), then follows the redirect and returns the page shown.
func (b *browser) submit(from, path string, form url.Values) (redirect page, shown page) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf(from))
	form.Set("back", from)
	redirect = b.post(path, form)
	if redirect.status != http.StatusSeeOther {
		b.t.Fatalf("POST %s: status %d, want 303; body:\n%s", path, redirect.status, redirect.body)
	}
	return redirect, b.get(redirect.header.Get("Location"))
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the csrf field of the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	p := b.get(path)
	if m := csrfField.FindStringSubmatch(p.body); m != nil {
		return html.UnescapeString(m[1])
	}
	// A page without forms (a finished task's): the token the session's forms carry.
	d, ok := b.h.(*Dashboard)
	if !ok {
		b.t.Fatalf("GET %s (status %d) has no csrf field", path, p.status)
	}
	var sess string
	if c := b.cookies[sessionCookie]; c != nil {
		sess = c.Value
	}
	return d.keys.csrfToken(sess)
}

func (p page) want(t *testing.T, status int) page {
	t.Helper()
	if p.status != status {
		t.Fatalf("status %d, want %d; body:\n%s", p.status, status, p.body)
	}
	return p
}

func (p page) contains(t *testing.T, fragments ...string) page {
	t.Helper()
	for _, f := range fragments {
		if !strings.Contains(p.body, f) {
			t.Fatalf("page does not contain %q; body:\n%s", f, p.body)
		}
	}
	return p
}

func (p page) lacks(t *testing.T, fragments ...string) page {
	t.Helper()
	for _, f := range fragments {
		if strings.Contains(p.body, f) {
			t.Fatalf("page contains %q; body:\n%s", f, p.body)
		}
	}
	return p
}

var flashPattern = regexp.MustCompile(`<div class="flash flash-(ok|error)" role="[a-z]+">([^<]*)</div>`)

// flash returns the kind ("ok", "error") and text of the page's flash, or "" "".
func (p page) flash() (string, string) {
	m := flashPattern.FindStringSubmatch(p.body)
	if m == nil {
		return "", ""
	}
	return m[1], html.UnescapeString(m[2])
}

func (p page) wantFlash(t *testing.T, kind, fragment string) page {
	t.Helper()
	k, msg := p.flash()
	if k != kind || !strings.Contains(msg, fragment) {
		t.Fatalf("flash %q %q, want %q containing %q; body:\n%s", k, msg, kind, fragment, p.body)
	}
	return p
}

// taskRows returns the ids of the tr[data-task-id] rows, in page order.
func (p page) taskRows() []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr data-task-id="([0-9a-f-]{36})">`).FindAllStringSubmatch(p.body, -1) {
		out = append(out, m[1])
	}
	return out
}

// rowStatus returns the status word in the td.status of the task's row.
func (p page) rowStatus(t *testing.T, id uuid.UUID) string {
	t.Helper()
	re := regexp.MustCompile(`<tr data-task-id="` + id.String() + `">\s*<td class="id">.*?</td>\s*<td class="status"><span class="[^"]*">([A-Z_]+)</span></td>`)
	m := re.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no row with a status for task %s; body:\n%s", id, p.body)
	}
	return m[1]
}

// queueCell returns the text of td[data-status=status] in tr[data-queue=queue].
func (p page) queueCell(t *testing.T, queue string, status store.Status) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-queue="` + regexp.QuoteMeta(queue) + `">(.*?)</tr>`).FindStringSubmatch(p.body)
	if row == nil {
		t.Fatalf("no row for queue %q; body:\n%s", queue, p.body)
	}
	cell := regexp.MustCompile(`<td data-status="` + string(status) + `"[^>]*>(?:<a [^>]*>)?([^<]*)`).FindStringSubmatch(row[1])
	if cell == nil {
		t.Fatalf("queue %q has no %s cell: %s", queue, status, row[1])
	}
	return cell[1]
}

// --- store fixtures ----------------------------------------------------------------

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func createTask(t *testing.T, st store.Store, p store.CreateParams) *store.Task {
	t.Helper()
	if p.Kind == "" {
		p.Kind = "noop"
	}
	res, err := st.CreateTasks(ctx(t), []store.CreateParams{p})
	if err != nil {
		t.Fatalf("CreateTasks: %v", err)
	}
	return res[0].Task
}

func claimTask(t *testing.T, st store.Store, task *store.Task, lease time.Duration) *store.Task {
	t.Helper()
	got, err := st.ClaimTasks(ctx(t), store.ClaimParams{Queue: task.Queue, From: store.StatusPending,
		TaskIDs: []uuid.UUID{task.ID}, WorkerID: "worker-1", Limit: 1, LeaseDuration: lease})
	if err != nil || len(got) != 1 {
		t.Fatalf("ClaimTasks(%s): %v, %d tasks", task.ID, err, len(got))
	}
	return got[0]
}

// finish creates a task and drives it to a terminal status.
func finish(t *testing.T, st store.Store, p store.CreateParams, to store.Status) *store.Task {
	t.Helper()
	if to == store.StatusDead {
		p.MaxAttempts = 1
	}
	task := createTask(t, st, p)
	if to == store.StatusCanceled {
		got, err := st.CancelTask(ctx(t), task.ID)
		if err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		return got
	}
	c := claimTask(t, st, task, time.Minute)
	o := store.Outcome{TaskID: c.ID, LeaseToken: c.LeaseToken}
	switch to {
	case store.StatusSucceeded:
		o.Kind = store.Succeed
	case store.StatusFailed:
		o.Kind, o.Error = store.Fail, "permanent <boom>"
	case store.StatusDead:
		o.Kind, o.Error = store.Retry, "transient boom"
	default:
		t.Fatalf("finish: unsupported status %s", to)
	}
	res, err := st.RecordOutcomes(ctx(t), []store.Outcome{o})
	if err != nil || res[0].Err != nil || res[0].Status != to {
		t.Fatalf("RecordOutcomes: %v %+v", err, res)
	}
	return getTask(t, st, task.ID)
}

func getTask(t *testing.T, st store.Store, id uuid.UUID) *store.Task {
	t.Helper()
	got, err := st.GetTask(ctx(t), id)
	if err != nil {
		t.Fatalf("GetTask(%s): %v", id, err)
	}
	return got
}

func wantStatus(t *testing.T, st store.Store, id uuid.UUID, want store.Status) {
	t.Helper()
	if got := getTask(t, st, id).Status; got != want {
		t.Fatalf("task %s is %s, want %s", id, got, want)
	}
}

func createSchedule(t *testing.T, st store.Store, name, spec, zone string) *store.Schedule {
	t.Helper()
	sc, err := st.CreateSchedule(ctx(t), store.ScheduleParams{Name: name, CronSpec: spec, Timezone: zone,
		Task: store.TaskTemplate{Kind: "noop", Payload: json.RawMessage(`{"report":"daily"}`)}})
	if err != nil {
		t.Fatalf("CreateSchedule: %v", err)
	}
	return sc
}

func getSchedule(t *testing.T, st store.Store, name string) *store.Schedule {
	t.Helper()
	sc, err := st.GetSchedule(ctx(t), name)
	if err != nil {
		t.Fatalf("GetSchedule(%s): %v", name, err)
	}
	return sc
}

func memoryStore(t *testing.T) store.Store {
	st := memory.New()
	t.Cleanup(st.Close)
	return st
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, 15*time.Second, 20*time.Millisecond, cond)
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// regexpFind returns the first group of pattern's first match in s, or "".
func regexpFind(pattern, s string) string {
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

func htmlUnescape(s string) string { return html.UnescapeString(s) }

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
