package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// TestBadInput: what cannot be right gets a 400 page with an error that says why, and
// changes nothing.
func TestBadInput(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		d := newDashboard(t, Config{Store: st})
		b := newBrowser(t, d)
		dead := finish(t, st, store.CreateParams{}, store.StatusDead)
		sc := createSchedule(t, st, "nightly", "0 3 * * *", "UTC")

		for path, msg := range map[string]string{
			"/tasks/not-a-uuid":                `"not-a-uuid" is not a task id`,
			"/tasks/" + dead.ID.String() + "x": "is not a task id",
			"/tasks?status=BOGUS":              `Unknown status "BOGUS"`,
			"/tasks?cursor=!!!":                "page cursor",
			"/tasks?cursor=" + url.QueryEscape(store.EncodeDeadLetterCursor(7)): "page cursor",
			"/dead-letters?reason=CANCELED":                                     `Unknown reason "CANCELED"`,
			"/dead-letters?cursor=zzz":                                          "page cursor",
			"/schedules/nightly?cursor=zzz":                                     "page cursor",
			"/tasks/search?id=":                                                 "Enter a task id",
			// Filters that are not names match nothing; PostgreSQL would refuse NUL and
			// invalid UTF-8 with a 500.
			"/tasks?queue=%00":         `queue "\x00" must start with a letter`,
			"/tasks?kind=%FF":          `kind "\xff" must start with a letter`,
			"/dead-letters?queue=%00":  `queue "\x00" must start with a letter`,
			"/dead-letters?kind=a%20b": `kind "a b" must start with a letter`,
		} {
			p := b.get(path)
			if p.status != http.StatusBadRequest {
				t.Errorf("GET %s: status %d, want 400", path, p.status)
				continue
			}
			p.wantFlash(t, "error", msg)
		}
		// A list page with a bad filter keeps its form, filled in, to correct it.
		b.get("/tasks?status=BOGUS&queue=q1").contains(t, `<form id="task-filter"`, `name="queue" value="q1"`)

		csrf := b.csrf("/tasks/" + dead.ID.String())
		for _, c := range []struct {
			path string
			form url.Values
			msg  string
		}{
			{"/tasks/not-a-uuid/cancel", nil, "is not a task id"},
			{"/tasks/not-a-uuid/replay", nil, "is not a task id"},
			{"/dead-letters/replay", url.Values{"task_id": {"nope"}}, `"nope" is not a task id`},
			{"/dead-letters/replay", url.Values{"reason": {"SUCCEEDED"}}, `Unknown reason "SUCCEEDED"`},
			{"/dead-letters/replay", url.Values{"queue": {"\x00"}}, `queue "\x00" must start with a letter`},
			{"/schedules/nightly/reschedule", url.Values{"next_run_at": {"tomorrow-ish"}}, `"tomorrow-ish" is not a time`},
			{"/schedules/nightly/reschedule", url.Values{}, "Enter the next run time"},
			{"/schedules/nightly/reschedule", url.Values{"next_run_at": {"0001-01-01T00:00:00Z"}}, "is before 1970-01-01"},
			{"/schedules/nightly/reschedule", url.Values{"next_run_at": {"1969-12-31T23:00"}}, "is before 1970-01-01"},
		} {
			form := url.Values{}
			for k, v := range c.form {
				form[k] = v
			}
			form.Set("csrf", csrf)
			p := b.post(c.path, form)
			if p.status != http.StatusBadRequest {
				t.Errorf("POST %s %v: status %d, want 400", c.path, c.form, p.status)
				continue
			}
			p.wantFlash(t, "error", c.msg)
		}
		wantStatus(t, st, dead.ID, store.StatusDead)
		if got := getSchedule(t, st, "nightly"); !got.NextRunAt.Equal(sc.NextRunAt) || !got.Enabled {
			t.Fatalf("schedule changed: next %s enabled %v", got.NextRunAt, got.Enabled)
		}

		// An oversized form is refused before it is read whole.
		big := url.Values{"csrf": {csrf}, "queue": {strings.Repeat("q", maxFormBytes)}}
		b.post("/dead-letters/replay", big).want(t, http.StatusBadRequest)
		wantStatus(t, st, dead.ID, store.StatusDead)
	})
}
