package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/rotaqueue/rota/internal/store"
)

// maxBulkReplay is how many tasks one filtered replay moves (the store's limit); the
// flash says when more may remain.
const maxBulkReplay = store.MaxListLimit

type deadLetterFilter struct {
	Queue  string
	Kind   string
	Reason string // "", DEAD or FAILED
	Cursor string
}

type deadLetterView struct {
	Filter deadLetterFilter
	Events []store.DeadLetter
	pager
}

func parseReason(raw string) (store.Status, error) {
	switch st := store.Status(strings.ToUpper(strings.TrimSpace(raw))); st {
	case "", store.StatusDead, store.StatusFailed:
		return st, nil
	}
	return "", badRequest("Unknown reason %q: choose DEAD or FAILED (or any).", raw)
}

func parseDeadLetterFilter(q url.Values) (deadLetterFilter, store.DeadLetterParams, error) {
	f := deadLetterFilter{
		Queue:  strings.TrimSpace(q.Get("queue")),
		Kind:   strings.TrimSpace(q.Get("kind")),
		Cursor: strings.TrimSpace(q.Get("cursor")),
	}
	p := store.DeadLetterParams{Queue: f.Queue, Kind: f.Kind, Cursor: f.Cursor, Limit: pageSize}
	reason, err := parseReason(q.Get("reason"))
	if err != nil {
		return f, p, err
	}
	f.Reason, p.Reason = string(reason), reason
	if f.Cursor != "" {
		if _, err := store.DecodeDeadLetterCursor(f.Cursor); err != nil {
			return f, p, badRequest("The page cursor %q is malformed; start again from the first page.", f.Cursor)
		}
	}
	return f, p, nil
}

func (f deadLetterFilter) query(cursor string) string {
	return queryString(map[string]string{"queue": f.Queue, "kind": f.Kind, "reason": f.Reason, "cursor": cursor})
}

func (d *Dashboard) deadLetterList(w http.ResponseWriter, r *http.Request) {
	f, p, err := parseDeadLetterFilter(r.URL.Query())
	v := deadLetterView{Filter: f}
	if err == nil {
		var next string
		v.Events, next, err = d.cfg.Store.ListDeadLetters(r.Context(), p)
		v.pager = pageLinks(func(c string) string { return "/dead-letters" + f.query(c) }, f.Cursor, next)
	}
	d.renderPage(w, r, err, "dead_letters", pageData{Title: "Dead letters", Nav: "dead-letters", Data: v})
}

// replayDeadLetters replays one task (task_id) or every DEAD and FAILED task matching
// queue, kind and reason (up to maxBulkReplay, oldest first).
func (d *Dashboard) replayDeadLetters(w http.ResponseWriter, r *http.Request) {
	form := r.PostForm
	if raw := form.Get("task_id"); raw != "" {
		id, err := parseTaskID(strings.TrimSpace(raw))
		if err != nil {
			d.fail(w, r, err)
			return
		}
		// The path of the one-task action, so both share their wording and rules.
		r.SetPathValue("id", id.String())
		d.replayTask(w, r)
		return
	}
	reason, err := parseReason(form.Get("reason"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	p := store.ReplayParams{
		Queue:  strings.TrimSpace(form.Get("queue")),
		Kind:   strings.TrimSpace(form.Get("kind")),
		Reason: reason,
		Limit:  maxBulkReplay,
	}
	if p.Queue == "" && p.Kind == "" && p.Reason == "" && form.Get("confirm") != confirmReplayAll {
		d.confirmReplay(w, r, p)
		return
	}
	tasks, err := d.cfg.Store.ReplayTasks(r.Context(), p)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	msg := fmt.Sprintf("Replayed %d %s%s.", len(tasks), plural(len(tasks), "task", "tasks"), describeReplay(p))
	switch {
	case len(tasks) == 0:
		msg = "No DEAD or FAILED task matches" + describeReplay(p) + "; nothing was replayed."
	case len(tasks) == maxBulkReplay:
		msg += fmt.Sprintf(" One replay moves at most %d: more may match, replay again.", maxBulkReplay)
	case d.deadTasksRemain(r, p):
		// A replay may stop short of the limit with more to come: of dead tasks sharing an
		// idempotency key only the oldest is replayed.
		msg += " Some matching tasks are still DEAD or FAILED: replay again to go on (a task whose idempotency key a live task holds cannot be replayed)."
	}
	d.redirectBack(w, r, "/dead-letters", flashOK, msg)
}

// A replay with no filter at all moves every dead task there is, by one stray click on
// "Replay matching" with empty fields. So it asks first: such a POST without
// confirm=confirmReplayAll changes nothing and answers a page that says how many tasks
// match, whose form carries the field (and the csrf field, as every form: no script
// dialog is needed, and none could weaken the check).
const confirmReplayAll = "all"

// replayCountCap bounds the count the confirmation shows: past it, "more than 10,000".
const replayCountCap = 10_000

type replayConfirmView struct {
	Count     string // "1,234" or "more than 10,000"
	Matching  int    // capped at replayCountCap+1
	MoreThanA bool   // more match than one replay moves
	PerReplay string // how many one replay moves
	Back      string // where the confirmed replay and the cancel link return
}

// confirmReplay answers a replay of everything that was not confirmed yet: the number
// of matching tasks and a form to go on. With none matching there is nothing to confirm.
func (d *Dashboard) confirmReplay(w http.ResponseWriter, r *http.Request, p store.ReplayParams) {
	n, err := d.cfg.Store.CountReplayable(r.Context(), p, replayCountCap+1)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if n == 0 {
		d.redirectBack(w, r, "/dead-letters", flashOK, "No DEAD or FAILED task matches; nothing was replayed.")
		return
	}
	back := "/dead-letters"
	if b := r.PostForm.Get("back"); b != "" && localPath(b) == b {
		back = b
	}
	v := replayConfirmView{Count: formatCount(int64(n)), Matching: n, MoreThanA: n > maxBulkReplay, PerReplay: formatCount(maxBulkReplay), Back: back}
	if n > replayCountCap {
		v.Count = "more than " + formatCount(replayCountCap)
	}
	d.render(w, r, http.StatusOK, "replay_confirm", pageData{Title: "Replay every dead task?", Nav: "dead-letters", Data: v})
}

// deadTasksRemain reports whether a DEAD or FAILED task still matches the bulk replay's
// filter (false when that cannot be told).
func (d *Dashboard) deadTasksRemain(r *http.Request, p store.ReplayParams) bool {
	statuses := []store.Status{store.StatusDead, store.StatusFailed}
	if p.Reason != "" {
		statuses = []store.Status{p.Reason}
	}
	left, _, err := d.cfg.Store.ListTasks(r.Context(), store.ListParams{Statuses: statuses, Queue: p.Queue, Kind: p.Kind, Limit: 1})
	return err == nil && len(left) > 0
}

// describeReplay names the filter of a bulk replay: " (queue emails, reason DEAD)".
func describeReplay(p store.ReplayParams) string {
	var parts []string
	if p.Queue != "" {
		parts = append(parts, "queue "+p.Queue)
	}
	if p.Kind != "" {
		parts = append(parts, "kind "+p.Kind)
	}
	if p.Reason != "" {
		parts = append(parts, "reason "+string(p.Reason))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
