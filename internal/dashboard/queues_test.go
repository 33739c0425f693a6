package dashboard

import (
	"net/http"
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
