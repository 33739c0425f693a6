package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// retryThenSucceed runs a task twice: the first attempt fails with errText and is
// retried at once, the second succeeds.
func retryThenSucceed(t *testing.T, st store.Store, errText string) *store.Task {
	t.Helper()
	task := createTask(t, st, store.CreateParams{MaxAttempts: 3})
	record(t, st, claimTask(t, st, task, time.Minute), store.Outcome{Kind: store.Retry, Error: errText}, store.StatusPending)
	record(t, st, claimTask(t, st, task, time.Minute), store.Outcome{Kind: store.Succeed}, store.StatusSucceeded)
	return getTask(t, st, task.ID)
}

// record writes o for the claimed task c and checks the status it leads to.
func record(t *testing.T, st store.Store, c *store.Task, o store.Outcome, want store.Status) {
	t.Helper()
	o.TaskID, o.LeaseToken = c.ID, c.LeaseToken
	res, err := st.RecordOutcomes(ctx(t), []store.Outcome{o})
	if err != nil || res[0].Err != nil || res[0].Status != want {
		t.Fatalf("RecordOutcomes(%s): %v %+v, want %s", o.Kind, err, res, want)
	}
}

func TestTaskListShowsLastError(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		dead := finish(t, st, store.CreateParams{}, store.StatusDead)
		failed := finish(t, st, store.CreateParams{}, store.StatusFailed)
		long := "line one of a long error\n" + strings.Repeat("x", 200) + " the end"
		recovered := retryThenSucceed(t, st, long)
		clean := finish(t, st, store.CreateParams{}, store.StatusSucceeded)
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/tasks").want(t, http.StatusOK)
		p.contains(t, `<th scope="col">Last error</th>`)
		cell := func(id string) string {
			t.Helper()
			row := regexpFind(`(?s)(<tr data-task-id="`+id+`">.*?</tr>)`, p.body)
			return regexpFind(`(?s)(<td class="last-error">.*?</td>)`, row)
		}
		if c := cell(dead.ID.String()); !strings.Contains(c, `title="transient boom">transient boom</span>`) {
			t.Fatalf("DEAD task's last error cell: %s", c)
		}
		// Escaped, never markup.
		if c := cell(failed.ID.String()); !strings.Contains(c, "permanent &lt;boom&gt;") || strings.Contains(c, "<boom>") {
			t.Fatalf("FAILED task's last error cell: %s", c)
		}
		// A long error is cut to one short line; the title holds all of it. On a task
		// that then succeeded it is marked as from an earlier attempt.
		c := cell(recovered.ID.String())
		if !strings.Contains(c, `class="error-snippet earlier"`) || !strings.Contains(c, "From an earlier attempt") ||
			!strings.Contains(htmlUnescape(c), `the end">line one of a long error xxx`) || !strings.Contains(c, "…</span>") {
			t.Fatalf("recovered task's last error cell: %s", c)
		}
		if c := cell(clean.ID.String()); !strings.Contains(c, `<span class="muted">—</span>`) {
			t.Fatalf("task without error: %s", c)
		}
		// The live region carries the column too.
		b.partial("/tasks").contains(t, `<td class="last-error">`)
	})
}

func TestTaskPageSucceededAfterAnError(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		task := retryThenSucceed(t, st, "flaky upstream")
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/tasks/"+task.ID.String()).want(t, http.StatusOK)
		p.contains(t, `<h2 id="last-error-heading">Error of an earlier attempt</h2>`,
			"this error is from attempt 1.", `class="error-text earlier">flaky upstream</pre>`)
		p.lacks(t, `<h2 id="last-error-heading">Last error</h2>`)

		// A DEAD task's error is its current state, and says where it came from.
		dead := finish(t, st, store.CreateParams{}, store.StatusDead)
		b.get("/tasks/"+dead.ID.String()).contains(t, `<h2 id="last-error-heading">Last error</h2>`,
			`<p class="note" id="last-error-note">From attempt 1.</p>`).lacks(t, "earlier attempt")
	})
}

func TestTaskPageTellsRunsApart(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		dead := finish(t, st, store.CreateParams{}, store.StatusDead)
		if _, err := st.ReplayTask(ctx(t), dead.ID); err != nil {
			t.Fatalf("ReplayTask: %v", err)
		}
		record(t, st, claimTask(t, st, dead, time.Minute), store.Outcome{Kind: store.Succeed}, store.StatusSucceeded)
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/tasks/"+dead.ID.String()).want(t, http.StatusOK)
		p.contains(t, `<th scope="col" class="num">Run</th>`, `<tr class="replay-divider" data-run="2">`,
			"run 2 starts, with a fresh attempt budget", `<span class="badge badge-replayed">REPLAYED</span> by an operator`)
		// Both runs have an attempt 1: the run column tells them apart.
		rows := regexpAll(`(?s)<tr class="attempt">\s*<td class="num run">(\d)</td>\s*<td class="num">(\d)</td>`, p.body)
		if want := [][2]string{{"1", "1"}, {"2", "1"}}; len(rows) != 2 || rows[0] != want[0] || rows[1] != want[1] {
			t.Fatalf("attempt rows (run, attempt) %v, want %v", rows, want)
		}

		// An error of the second run says which run it is from.
		again := finish(t, st, store.CreateParams{}, store.StatusDead)
		if _, err := st.ReplayTask(ctx(t), again.ID); err != nil {
			t.Fatalf("ReplayTask: %v", err)
		}
		record(t, st, claimTask(t, st, again, time.Minute), store.Outcome{Kind: store.Retry, Error: "run two boom"}, store.StatusDead)
		b.get("/tasks/"+again.ID.String()).contains(t, `<p class="note" id="last-error-note">From attempt 1 of run 2.</p>`,
			`<pre id="task-last-error" class="error-text">run two boom</pre>`)

		// One run: no run column, no divider.
		one := finish(t, st, store.CreateParams{}, store.StatusDead)
		b.get("/tasks/"+one.ID.String()).lacks(t, `class="num">Run</th>`, "replay-divider")
	})
}

func TestReplayAllAsksFirst(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		var dead []*store.Task
		for range 3 {
			dead = append(dead, finish(t, st, store.CreateParams{Queue: "emails"}, store.StatusDead))
		}
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		// Empty filters: a page asks, with the count, and nothing moves.
		form := url.Values{"csrf": {b.csrf("/dead-letters")}, "back": {"/dead-letters?reason="}, "queue": {""}, "kind": {""}, "reason": {""}}
		p := b.post("/dead-letters/replay", form).want(t, http.StatusOK)
		p.contains(t, `<strong id="replay-count">3</strong> DEAD and FAILED tasks`, `<form id="replay-confirm-form"`,
			`name="confirm" value="all"`, `name="back" value="/dead-letters?reason="`, `<a id="replay-cancel" href="/dead-letters?reason="`)
		for _, task := range dead {
			wantStatus(t, st, task.ID, store.StatusDead)
		}

		// The confirmation's own form (its csrf field included) replays them.
		confirm := url.Values{}
		for _, name := range []string{"csrf", "back", "confirm"} {
			confirm.Set(name, htmlUnescape(regexpFind(`name="`+name+`" value="([^"]*)"`, p.body)))
		}
		redirect := b.post("/dead-letters/replay", confirm).want(t, http.StatusSeeOther)
		if loc := redirect.header.Get("Location"); loc != "/dead-letters?reason=" {
			t.Fatalf("confirmed replay went to %q", loc)
		}
		b.get("/dead-letters").wantFlash(t, "ok", "Replayed 3 tasks.")
		for _, task := range dead {
			wantStatus(t, st, task.ID, store.StatusPending)
		}

		// The confirm field does not lift the csrf check.
		b.post("/dead-letters/replay", url.Values{"confirm": {"all"}}).want(t, http.StatusForbidden)
		// Nothing left: no question, just the answer.
		_, shown := b.submit("/dead-letters", "/dead-letters/replay", url.Values{})
		shown.wantFlash(t, "ok", "No DEAD or FAILED task matches; nothing was replayed.")
		// A filter is its own confirmation, as before.
		finish(t, st, store.CreateParams{Queue: "emails"}, store.StatusDead)
		_, shown = b.submit("/dead-letters", "/dead-letters/replay", url.Values{"queue": {"emails"}})
		shown.wantFlash(t, "ok", "Replayed 1 task (queue emails).")
	})
}

// manyDead answers CountReplayable as a store holding many dead tasks would.
type manyDead struct {
	store.Store
	n      int
	atMost int
}

func (m *manyDead) CountReplayable(_ context.Context, _ store.ReplayParams, atMost int) (int, error) {
	m.atMost = atMost
	return min(m.n, atMost), nil
}

func TestReplayAllConfirmationCountIsCapped(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []string
	}{
		{1, []string{`<strong id="replay-count">1</strong> DEAD and FAILED task of`, "Yes, replay it"}},
		{1234, []string{`<strong id="replay-count">1,234</strong>`, "One replay moves at most 1,000 of them", "Yes, replay the oldest 1,000"}},
		{50_000, []string{`<strong id="replay-count">more than 10,000</strong>`}},
	} {
		m := &manyDead{Store: memoryStore(t), n: c.n}
		b := newBrowser(t, newDashboard(t, Config{Store: m}))
		b.post("/dead-letters/replay", url.Values{"csrf": {b.csrf("/dead-letters")}}).want(t, http.StatusOK).contains(t, c.want...)
		if m.atMost != replayCountCap+1 {
			t.Fatalf("counted up to %d, want %d", m.atMost, replayCountCap+1)
		}
	}
}

// regexpAll returns the two groups of every match of pattern in s.
func regexpAll(pattern, s string) [][2]string {
	var out [][2]string
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(s, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}
