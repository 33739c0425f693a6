package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

func TestOverview(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		for range 3 {
			finish(t, st, store.CreateParams{}, store.StatusSucceeded)
		}
		finish(t, st, store.CreateParams{}, store.StatusFailed)
		finish(t, st, store.CreateParams{Queue: "emails"}, store.StatusDead)
		createTask(t, st, store.CreateParams{Queue: "emails"})
		createTask(t, st, store.CreateParams{Queue: "emails", ScheduledFor: time.Now().Add(time.Hour)})
		stuck := claimTask(t, st, createTask(t, st, store.CreateParams{Queue: "emails", Kind: "slow"}), 50*time.Millisecond)
		claimTask(t, st, createTask(t, st, store.CreateParams{Queue: "emails"}), time.Hour)
		waitFor(t, "the short lease to expire", func() bool {
			got, err := st.StuckTasks(ctx(t), 10)
			return err == nil && len(got) == 1
		})

		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		p := b.get("/").want(t, http.StatusOK)
		p.contains(t, `<main id="content" data-poll="1000">`, `id="queue-counts"`, `<svg id="throughput-chart"`,
			`data-nav="overview" href="/" aria-current="page"`, `data-nav="tasks" href="/tasks"`,
			`data-nav="dead-letters" href="/dead-letters"`, `data-nav="schedules" href="/schedules"`)
		for _, c := range []struct {
			queue  string
			status store.Status
			want   string
		}{
			{"default", store.StatusSucceeded, "3"}, {"default", store.StatusFailed, "1"}, {"default", store.StatusPending, "0"},
			{"emails", store.StatusDead, "1"}, {"emails", store.StatusPending, "2"}, {"emails", store.StatusProcessing, "2"},
		} {
			if got := p.queueCell(t, c.queue, c.status); got != c.want {
				t.Errorf("queue %s %s: %q, want %q", c.queue, c.status, got, c.want)
			}
		}
		// The oldest due PENDING task of emails is seconds old; default has none.
		p.contains(t, `<td class="oldest-pending num">—</td>`)
		if !regexpMatch(`<td class="oldest-pending num"><span title="[^"]+Z">\d+s</span></td>`, p.body) {
			t.Fatalf("no oldest-pending age for emails:\n%s", p.body)
		}
		p.contains(t, `<td class="stuck num alert">1</td>`, `<td class="stuck num">0</td>`)
		// 3 succeeded, 2 failed (FAILED and DEAD) in the last hour.
		p.contains(t, `<strong id="failure-rate">40.0%</strong>`, "3 succeeded", "2 failed", `class="bar-ok"`, `class="bar-fail"`)
		// The stuck list names the task whose lease expired, not the one still leased.
		stuckSection := p.body[strings.Index(p.body, `id="stuck-tasks"`):]
		if rows := (page{body: stuckSection}).taskRows(); !slices.Equal(rows, []string{stuck.ID.String()}) {
			t.Fatalf("stuck tasks %v, want [%s]", rows, stuck.ID)
		}
		p.contains(t, `<a class="task-link" href="/tasks/`+stuck.ID.String()+`">`)
	})
}

func TestOverviewEmpty(t *testing.T) {
	b := newBrowser(t, newDashboard(t, Config{Store: memoryStore(t)}))
	b.get("/").want(t, http.StatusOK).contains(t, "No tasks yet.", `<strong id="failure-rate">—</strong>`,
		"No task finished in the last hour", "No task is stuck past its lease.")
}

func TestTaskListFiltersAndPages(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		var emails []string
		for i := range 60 {
			task := createTask(t, st, store.CreateParams{Queue: "emails", Kind: fmt.Sprintf("k%d", i%2)})
			emails = append(emails, task.ID.String())
		}
		done := finish(t, st, store.CreateParams{Queue: "reports", Kind: "render"}, store.StatusSucceeded)
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		// Newest first, one page of 50, then the rest through a#next-page.
		p := b.get("/tasks").want(t, http.StatusOK)
		p.contains(t, `<form id="task-filter"`, `<select name="status">`, `<input name="queue"`, `<input name="kind"`,
			`<form id="task-search"`, `action="/tasks/search"`, `<input name="id"`)
		first := p.taskRows()
		if len(first) != pageSize || first[0] != done.ID.String() {
			t.Fatalf("first page: %d rows starting %v, want %d starting with the newest task", len(first), first[:1], pageSize)
		}
		next := regexpFind(`<a id="next-page" href="([^"]+)">`, p.body)
		if next == "" {
			t.Fatal("no next-page link on a full first page")
		}
		p2 := b.get(htmlUnescape(next)).want(t, http.StatusOK)
		second := p2.taskRows()
		if len(second) != 61-pageSize {
			t.Fatalf("second page: %d rows, want %d", len(second), 61-pageSize)
		}
		if strings.Contains(p2.body, `id="next-page"`) {
			t.Fatal("the last page has a next-page link")
		}
		all := append(slices.Clone(first), second...)
		slices.Sort(all)
		if len(slices.Compact(all)) != 61 {
			t.Fatal("pages overlap or miss tasks")
		}

		// Filters: status, queue, kind (and their combination), each row showing its fields.
		p = b.get("/tasks?status=SUCCEEDED").want(t, http.StatusOK)
		if rows := p.taskRows(); !slices.Equal(rows, []string{done.ID.String()}) {
			t.Fatalf("status=SUCCEEDED rows %v", rows)
		}
		p.contains(t, `<option value="SUCCEEDED" selected>`, `<td class="queue">reports</td>`, `<td class="kind">render</td>`,
			`<a class="task-link" href="/tasks/`+done.ID.String()+`">`)
		if got := p.rowStatus(t, done.ID); got != "SUCCEEDED" {
			t.Fatalf("row status %q", got)
		}
		if rows := b.get("/tasks?status=pending&queue=emails&kind=k1").want(t, http.StatusOK).taskRows(); len(rows) != 30 {
			t.Fatalf("PENDING emails k1: %d rows, want 30", len(rows))
		}
		if rows := b.get("/tasks?queue=reports").taskRows(); len(rows) != 1 {
			t.Fatalf("queue=reports: %d rows", len(rows))
		}
		b.get("/tasks?queue=nowhere").want(t, http.StatusOK).contains(t, "No tasks match.")
	})
}

func TestTaskSearch(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		task := createTask(t, st, store.CreateParams{})
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		p := b.get("/tasks/search?id="+task.ID.String()).want(t, http.StatusSeeOther)
		if loc := p.header.Get("Location"); loc != "/tasks/"+task.ID.String() {
			t.Fatalf("Location %q", loc)
		}
		p = b.get("/tasks/search?id=not-a-uuid").want(t, http.StatusBadRequest)
		p.wantFlash(t, "error", "is not a task id")
		missing := store.NewID()
		p = b.get("/tasks/search?id="+missing.String()).want(t, http.StatusNotFound)
		p.wantFlash(t, "error", "No task has the id "+missing.String()+".")
		// The list page stays usable: its forms are there to search again.
		p.contains(t, `<form id="task-search"`)
	})
}

func TestTaskPage(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		pending := createTask(t, st, store.CreateParams{Kind: "mail", Payload: []byte(`{"to":"a@example.com","n":[1,2]}`)})
		dead := finish(t, st, store.CreateParams{}, store.StatusDead)
		failed := finish(t, st, store.CreateParams{}, store.StatusFailed)
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/tasks/"+pending.ID.String()).want(t, http.StatusOK)
		p.contains(t, `<span id="task-status" class="badge badge-pending">PENDING</span>`,
			`<pre id="task-payload" class="payload">{`, `&#34;to&#34;: &#34;a@example.com&#34;`,
			`<pre id="task-last-error"`, `<table id="attempts"`, "No attempts yet.",
			`<form id="cancel-form" method="post" action="/tasks/`+pending.ID.String()+`/cancel">`, `<button id="cancel-task"`)
		p.lacks(t, `id="replay-form"`, `<tr class="attempt">`)

		p = b.get("/tasks/"+dead.ID.String()).want(t, http.StatusOK)
		p.contains(t, `<span id="task-status" class="badge badge-dead">DEAD</span>`, `<tr class="attempt">`,
			"worker-1", `<span class="badge badge-dead">DEAD</span>`, "transient boom",
			`<form id="replay-form" method="post" action="/tasks/`+dead.ID.String()+`/replay">`, `<button id="replay-task"`)
		p.lacks(t, `id="cancel-form"`)
		if n := strings.Count(p.body, `<tr class="attempt">`); n != 1 {
			t.Fatalf("%d attempt rows, want 1", n)
		}
		// Error text is escaped, never markup.
		b.get("/tasks/"+failed.ID.String()).contains(t, "permanent &lt;boom&gt;").lacks(t, "<boom>")
	})
}

func TestDeadLetterPage(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		dead := finish(t, st, store.CreateParams{Queue: "emails", Kind: "mail"}, store.StatusDead)
		failed := finish(t, st, store.CreateParams{Kind: "render"}, store.StatusFailed)
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/dead-letters").want(t, http.StatusOK)
		if rows := p.taskRows(); !slices.Equal(rows, []string{failed.ID.String(), dead.ID.String()}) {
			t.Fatalf("rows %v, want newest first", rows)
		}
		p.contains(t, `<td class="reason"><span class="badge badge-dead">DEAD</span></td>`,
			`<td class="reason"><span class="badge badge-failed">FAILED</span></td>`, "transient boom",
			`<form id="replay-filtered"`, `action="/dead-letters/replay"`, `name="task_id" value="`+dead.ID.String()+`"`,
			`<button type="submit" class="replay-one" aria-label="Replay task `+dead.ID.String()+`">`)
		if rows := b.get("/dead-letters?reason=dead").want(t, http.StatusOK).taskRows(); !slices.Equal(rows, []string{dead.ID.String()}) {
			t.Fatalf("reason=dead rows %v", rows)
		}
		if rows := b.get("/dead-letters?queue=default&kind=render").taskRows(); !slices.Equal(rows, []string{failed.ID.String()}) {
			t.Fatalf("queue+kind rows %v", rows)
		}
	})
}

func TestSchedulePages(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		sc := createSchedule(t, st, "nightly", "0 3 * * *", "Europe/Berlin")
		run, err := st.TriggerSchedule(ctx(t), "nightly")
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/schedules").want(t, http.StatusOK)
		p.contains(t, `<tr data-schedule="nightly">`, `<a class="schedule-link" href="/schedules/nightly">`,
			`<td class="cron"><code>0 3 * * *</code></td>`, `<td class="timezone">Europe/Berlin</td>`,
			`<td class="next-run"><time datetime="`+sc.NextRunAt.UTC().Format(time.RFC3339)+`"`,
			`<td class="last-run"><span class="muted">—</span></td>`,
			`<td class="enabled"><span class="badge badge-enabled">enabled</span></td>`,
			`class="pause-schedule"`, `class="trigger-schedule"`)
		p.lacks(t, `class="resume-schedule"`)

		p = b.get("/schedules/nightly").want(t, http.StatusOK)
		p.contains(t, `<form id="reschedule-form"`, `name="next_run_at"`,
			`value="`+sc.NextRunAt.In(mustZone(t, "Europe/Berlin")).Format("2006-01-02T15:04")+`"`,
			`<table id="schedule-runs"`, `&#34;report&#34;: &#34;daily&#34;`)
		if rows := p.taskRows(); !slices.Equal(rows, []string{run.ID.String()}) {
			t.Fatalf("run rows %v, want the triggered run", rows)
		}
		b.get("/schedules").contains(t, "nightly")
		b.get("/schedules/unknown").want(t, http.StatusNotFound).wantFlash(t, "error", `No schedule is named "unknown"`)
		b.get("/schedules/bad:name").want(t, http.StatusNotFound)
	})
}

func TestEmptyListsAndNotFound(t *testing.T) {
	b := newBrowser(t, newDashboard(t, Config{Store: memoryStore(t)}))
	b.get("/schedules").want(t, http.StatusOK).contains(t, "No schedules yet.")
	b.get("/dead-letters").want(t, http.StatusOK).contains(t, "No dead letters match.")
	b.get("/tasks").want(t, http.StatusOK).contains(t, "No tasks match.")
	b.get("/no/such/page").want(t, http.StatusNotFound).wantFlash(t, "error", "There is no page at /no/such/page")
	b.get("/tasks/"+store.NewID().String()).want(t, http.StatusNotFound).wantFlash(t, "error", "No task has the id")
}

// TestPartialRendersOnlyContent: live-update fetches get the inside of #content with
// every live region, and leave the flash cookie for the full page.
func TestPartialRendersOnlyContent(t *testing.T) {
	st := memoryStore(t)
	task := createTask(t, st, store.CreateParams{})
	d := newDashboard(t, Config{Store: st})
	b := newBrowser(t, d)
	for path, regions := range map[string][]string{
		"/":                          {"queues", "throughput", "stuck"},
		"/tasks":                     {"tasks"},
		"/tasks/" + task.ID.String(): {"task"},
		"/dead-letters":              {"dead-letters"},
		"/schedules":                 {"schedules"},
	} {
		full := b.get(path).want(t, http.StatusOK)
		part := b.partial(path).want(t, http.StatusOK)
		if strings.Contains(part.body, "<html") || strings.Contains(part.body, `<main id="content"`) || strings.Contains(part.body, "<header") {
			t.Fatalf("partial %s holds more than the content region:\n%s", path, part.body)
		}
		for _, r := range regions {
			tag := `data-live="` + r + `"`
			if !strings.Contains(part.body, tag) || !strings.Contains(full.body, tag) {
				t.Fatalf("%s: region %s missing from the full page or the partial", path, r)
			}
		}
		if v := part.header.Values("Vary"); !slices.Contains(v, partialHeader) {
			t.Fatalf("partial %s: Vary %v", path, v)
		}
	}

	// A flash set by an action waits for the full page: the live fetch that may run
	// between the redirect and the page load neither shows nor clears it.
	form := url.Values{"csrf": {b.csrf("/tasks/" + task.ID.String())}, "back": {"/tasks"}}
	b.post("/tasks/"+task.ID.String()+"/cancel", form).want(t, http.StatusSeeOther)
	part := b.partial("/tasks").want(t, http.StatusOK)
	if k, _ := part.flash(); k != "" {
		t.Fatal("a partial showed the flash")
	}
	for _, c := range part.setCookies {
		if c.Name == flashCookie {
			t.Fatal("a partial touched the flash cookie")
		}
	}
	b.get("/tasks").wantFlash(t, "ok", "Task canceled")
	if k, _ := b.get("/tasks").flash(); k != "" {
		t.Fatal("the flash showed twice")
	}
}

func TestAssets(t *testing.T) {
	d := newDashboard(t, Config{Store: memoryStore(t), Token: "tok"})
	b := newBrowser(t, d)
	for _, name := range []string{"app.css", "live.js", "favicon.svg"} {
		u, err := d.assets.url(name)
		if err != nil {
			t.Fatal(err)
		}
		p := b.get(u).want(t, http.StatusOK) // public: no session
		if p.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || p.header.Get("ETag") == "" {
			t.Fatalf("%s: Cache-Control %q ETag %q", name, p.header.Get("Cache-Control"), p.header.Get("ETag"))
		}
		if len(p.body) == 0 {
			t.Fatalf("%s is empty", name)
		}
		req := httptest.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("If-None-Match", p.header.Get("ETag"))
		b.do(req).want(t, http.StatusNotModified)
		// An old version's link is revalidated rather than cached for good.
		if old := b.get("/assets/" + name + "?v=old"); old.header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("%s?v=old: Cache-Control %q", name, old.header.Get("Cache-Control"))
		}
	}
	if ct := b.get("/assets/live.js").header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Fatalf("live.js Content-Type %q", ct)
	}
	b.get("/assets/nope.js").want(t, http.StatusNotFound)
	// Pages link the versioned files.
	css, _ := d.assets.url("app.css")
	b.cookies[sessionCookie] = &http.Cookie{Name: sessionCookie, Value: d.keys.newSession(time.Now())}
	b.get("/").contains(t, `<link rel="stylesheet" href="`+css+`">`)
}
