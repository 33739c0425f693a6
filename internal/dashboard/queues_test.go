package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

func TestQueuesPage(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		for range 2 {
			createTask(t, st, store.CreateParams{Queue: "emails"})
		}
		claimTask(t, st, createTask(t, st, store.CreateParams{Queue: "emails"}), time.Minute)
		finish(t, st, store.CreateParams{Queue: "emails"}, store.StatusDead)
		finish(t, st, store.CreateParams{Queue: "emails"}, store.StatusFailed)
		finish(t, st, store.CreateParams{Queue: "reports"}, store.StatusSucceeded)
		createTask(t, st, store.CreateParams{Queue: "reports", ScheduledFor: time.Now().Add(time.Hour)})
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/queues").want(t, http.StatusOK)
		p.contains(t, `<a data-nav="queues" href="/queues" aria-current="page">Queues</a>`, `<table id="queue-list"`)
		row := func(queue string) string {
			t.Helper()
			r := regexpFind(`(?s)(<tr data-queue="`+queue+`">.*?</tr>)`, p.body)
			if r == "" {
				t.Fatalf("no row for queue %s in:\n%s", queue, p.body)
			}
			return r
		}
		emails := row("emails")
		for _, want := range []string{`<td class="waiting num">2</td>`, `<td class="processing num">1</td>`,
			`<a href="/dead-letters?queue=emails">2</a>`, `<td class="total num">5</td>`, `<td class="oldest-due num"><span title=`} {
			if !strings.Contains(emails, want) {
				t.Fatalf("emails row lacks %s:\n%s", want, emails)
			}
		}
		// A task due in an hour waits, but nothing is due: no oldest age.
		reports := row("reports")
		for _, want := range []string{`<td class="waiting num">1</td>`, `<td class="oldest-due num"><span class="muted">—</span></td>`,
			`<td class="dead num zero">0</td>`, `<td class="total num">2</td>`} {
			if !strings.Contains(reports, want) {
				t.Fatalf("reports row lacks %s:\n%s", want, reports)
			}
		}
		// Every page links to it; the live region is there for partial swaps.
		b.get("/tasks").contains(t, `<a data-nav="queues" href="/queues">Queues</a>`)
		b.partial("/queues").contains(t, `data-live="queue-list"`).lacks(t, "<html")
	})
}

func TestQueuesPageEmpty(t *testing.T) {
	b := newBrowser(t, newDashboard(t, Config{Store: memoryStore(t)}))
	b.get("/queues").want(t, http.StatusOK).contains(t, "No queue holds a task yet.")
}

// The Queues page shows each queue's settings (a configured queue without tasks too),
// pauses and resumes with POST forms, and sets limits with its form; the overview shows
// the paused state and limits of the queues that have them.
func TestQueueSettingsOnThePages(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		createTask(t, st, store.CreateParams{Queue: "emails"})
		createTask(t, st, store.CreateParams{Queue: "reports"})
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		row := func(p page, queue string) string {
			t.Helper()
			r := regexpFind(`(?s)(<tr data-queue="`+queue+`">.*?</tr>)`, p.body)
			if r == "" {
				t.Fatalf("no row for queue %s in:\n%s", queue, p.body)
			}
			return r
		}

		p := b.get("/queues").want(t, http.StatusOK)
		if r := row(p, "emails"); !strings.Contains(r, "no limits") || !strings.Contains(r, `action="/queues/emails/pause"`) {
			t.Fatalf("an unconfigured queue's row:\n%s", r)
		}

		// Pause: a POST form with the CSRF field, back to the page with a flash.
		redirect, shown := b.submit("/queues", "/queues/emails/pause", nil)
		if loc := redirect.header.Get("Location"); loc != "/queues" {
			t.Fatalf("pause went to %q", loc)
		}
		shown.wantFlash(t, "ok", "Queue emails paused")
		if r := row(shown, "emails"); !strings.Contains(r, `<span class="badge badge-paused">paused</span>`) || !strings.Contains(r, `action="/queues/emails/resume"`) {
			t.Fatalf("a paused queue's row:\n%s", r)
		}
		if s, err := st.GetQueueSettings(t.Context(), "emails"); err != nil || !s.Paused {
			t.Fatalf("after pause: %+v, %v", s, err)
		}

		// Set limits; an empty field keeps its limit, none removes one.
		_, shown = b.submit("/queues", "/queues/limits", url.Values{"queue": {"emails"}, "concurrency": {"5"}, "rate": {"100/1s"}, "group_concurrency": {"1"}})
		shown.wantFlash(t, "ok", "Queue emails: concurrency 5, rate 100/1s, group concurrency 1.")
		_, shown = b.submit("/queues", "/queues/limits", url.Values{"queue": {"emails"}, "rate": {"none"}, "group_rate": {"10/60s"}})
		shown.wantFlash(t, "ok", "Queue emails: concurrency 5, group concurrency 1, group rate 10/60s.")
		if r := row(shown, "emails"); !strings.Contains(r, `<span class="limit">concurrency 5</span>`) || !strings.Contains(r, `<span class="limit">group rate 10/60s</span>`) {
			t.Fatalf("the limits in the row:\n%s", r)
		}
		// A queue with no task can be configured, and is listed.
		_, shown = b.submit("/queues", "/queues/limits", url.Values{"queue": {"later"}, "concurrency": {"2"}})
		if r := row(shown, "later"); !strings.Contains(r, `<td class="total num">0</td>`) || !strings.Contains(r, "concurrency 2") {
			t.Fatalf("a configured queue without tasks:\n%s", r)
		}

		// The overview shows the paused state and the limits.
		ov := b.get("/").want(t, http.StatusOK)
		if r := row(ov, "emails"); !strings.Contains(r, "badge-paused") || !strings.Contains(r, "concurrency 5, group concurrency 1, group rate 10/60s") {
			t.Fatalf("overview row of emails:\n%s", r)
		}
		if r := row(ov, "reports"); strings.Contains(r, "badge-paused") || strings.Contains(r, "limits") {
			t.Fatalf("overview row of an unconfigured queue:\n%s", r)
		}

		// Resume.
		_, shown = b.submit("/queues", "/queues/emails/resume", nil)
		shown.wantFlash(t, "ok", "Queue emails resumed")
		if r := row(shown, "emails"); strings.Contains(r, "badge-paused") {
			t.Fatalf("resumed row:\n%s", r)
		}
	})
}

// Bad input is a 400 page and changes nothing; a POST without the CSRF field is refused.
func TestQueueActionsRefuseBadInput(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		b.get("/queues").want(t, http.StatusOK)
		for _, form := range []url.Values{
			{"queue": {"q"}},
			{"queue": {"q"}, "concurrency": {"0"}},
			{"queue": {"q"}, "concurrency": {"many"}},
			{"queue": {"q"}, "rate": {"100"}},
			{"queue": {"q"}, "group_rate": {"1/0s"}},
			{"queue": {"bad name"}, "concurrency": {"1"}},
			{"queue": {""}, "concurrency": {"1"}},
		} {
			form.Set("csrf", b.csrf("/queues"))
			b.post("/queues/limits", form).want(t, http.StatusBadRequest)
		}
		b.post("/queues/q/pause", url.Values{}).want(t, http.StatusForbidden)
		if qs, err := st.ListQueueSettings(t.Context()); err != nil || len(qs) != 0 {
			t.Fatalf("refused actions configured %d queues: %v", len(qs), err)
		}
	})
}
