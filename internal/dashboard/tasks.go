package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/store"
)

// pageSize is how many rows a list page shows.
const pageSize = store.DefaultListLimit

type taskFilter struct {
	Status string // "" = any
	Queue  string
	Kind   string
	Cursor string
}

type taskListView struct {
	Filter taskFilter
	Tasks  []*store.Task
	pager
}

// parseTaskFilter reads the query of /tasks. Unknown parameters are ignored (a browser
// form may add its own); a bad status or cursor is a 400.
func parseTaskFilter(q url.Values) (taskFilter, store.ListParams, error) {
	f := taskFilter{
		Status: strings.ToUpper(strings.TrimSpace(q.Get("status"))),
		Queue:  strings.TrimSpace(q.Get("queue")),
		Kind:   strings.TrimSpace(q.Get("kind")),
		Cursor: strings.TrimSpace(q.Get("cursor")),
	}
	p := store.ListParams{Queue: f.Queue, Kind: f.Kind, Cursor: f.Cursor, Limit: pageSize}
	if f.Status != "" {
		st := store.Status(f.Status)
		if !st.Valid() {
			return f, p, badRequest("Unknown status %q: choose one of %s.", q.Get("status"), statusNames())
		}
		p.Statuses = []store.Status{st}
	}
	if f.Cursor != "" {
		if _, err := store.DecodeTaskCursor(f.Cursor); err != nil {
			return f, p, badRequest("The page cursor %q is malformed; start again from the first page.", f.Cursor)
		}
	}
	return f, p, nil
}

func statusNames() string {
	names := make([]string, len(store.AllStatuses))
	for i, st := range store.AllStatuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

// query is the filter as a query string, with cursor.
func (f taskFilter) query(cursor string) string {
	return queryString(map[string]string{"status": f.Status, "queue": f.Queue, "kind": f.Kind, "cursor": cursor})
}

func (d *Dashboard) taskList(w http.ResponseWriter, r *http.Request) {
	f, p, err := parseTaskFilter(r.URL.Query())
	v := taskListView{Filter: f}
	if err == nil {
		var next string
		v.Tasks, next, err = d.cfg.Store.ListTasks(r.Context(), p)
		v.pager = pageLinks(func(c string) string { return "/tasks" + f.query(c) }, f.Cursor, next)
	}
	d.renderPage(w, r, err, "tasks", pageData{Title: "Tasks", Nav: "tasks", Data: v})
}

// taskSearch goes to the task named by ?id=, or shows the task list with an error.
func (d *Dashboard) taskSearch(w http.ResponseWriter, r *http.Request) {
	raw := strings.TrimSpace(r.URL.Query().Get("id"))
	id, err := parseTaskID(raw)
	if err == nil {
		_, err = d.cfg.Store.GetTask(r.Context(), id)
		if errors.Is(err, store.ErrNotFound) {
			err = notFound("No task has the id %s.", id)
		}
	}
	if err != nil {
		d.renderPage(w, r, err, "tasks", pageData{Title: "Tasks", Nav: "tasks", Data: taskListView{}})
		return
	}
	http.Redirect(w, r, "/tasks/"+id.String(), http.StatusSeeOther)
}

func parseTaskID(raw string) (uuid.UUID, error) {
	if raw == "" {
		return uuid.Nil, badRequest("Enter a task id (a UUID such as 0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f).")
	}
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		return uuid.Nil, badRequest("%q is not a task id: task ids are UUIDs such as 0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f.", raw)
	}
	return id, nil
}

type taskView struct {
	Task      *store.Task
	Attempts  []attemptRow
	Runs      int // how many runs the history holds: 1 + the replays
	LastError lastErrorView
	CanCancel bool
	CanReplay bool
}

// attemptRow is one row of a task's attempt history with the run it belongs to. A
// replay starts the task again with attempt numbers from 1, so "attempt 2" alone is
// ambiguous: run 1 lasts until the first REPLAYED event, and each one starts a new run.
type attemptRow struct {
	store.Attempt
	Run    int
	Replay bool // a REPLAYED event: the boundary after which run Run begins
}

// attemptRows numbers the runs of attempts (oldest first, as ListAttempts returns them).
func attemptRows(attempts []store.Attempt) (rows []attemptRow, runs int) {
	runs = 1
	rows = make([]attemptRow, len(attempts))
	for i, a := range attempts {
		replay := a.Outcome == store.OutcomeReplayed
		if replay {
			runs++
		}
		rows[i] = attemptRow{Attempt: a, Run: runs, Replay: replay}
	}
	return rows, runs
}

// lastErrorView is the task's last_error with where it came from. The column keeps the
// error of the latest failed attempt even after a later attempt succeeds, so on a
// SUCCEEDED task it is history, not the task's state.
type lastErrorView struct {
	Text    string
	Earlier bool // the task succeeded after this error
	Attempt int  // the attempt it came from; 0 when the history does not show it
	Run     int
}

func lastError(t *store.Task, rows []attemptRow) lastErrorView {
	v := lastErrorView{Text: t.LastError, Earlier: t.Status == store.StatusSucceeded && t.LastError != ""}
	if t.LastError == "" {
		return v
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if a := rows[i]; !a.Replay && a.Error == t.LastError {
			v.Attempt, v.Run = a.Attempt.Attempt, a.Run
			break
		}
	}
	return v
}

func (d *Dashboard) taskPage(w http.ResponseWriter, r *http.Request) {
	id, err := parseTaskID(r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	t, err := d.cfg.Store.GetTask(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("No task has the id %s (it may have been removed by retention).", id)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	attempts, err := d.cfg.Store.ListAttempts(r.Context(), id)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	rows, runs := attemptRows(attempts)
	v := taskView{
		Task:      t,
		Attempts:  rows,
		Runs:      runs,
		LastError: lastError(t, rows),
		// A PROCESSING task whose cancel was already asked for has nothing left to ask.
		CanCancel: t.Status == store.StatusPending || t.Status == store.StatusEnqueued ||
			(t.Status == store.StatusProcessing && t.CancelRequestedAt == nil),
		CanReplay: t.Status == store.StatusDead || t.Status == store.StatusFailed || t.Status == store.StatusCanceled,
	}
	d.render(w, r, http.StatusOK, "task", pageData{Title: "Task " + id.String(), Nav: "tasks", Data: v})
}

func (d *Dashboard) cancelTask(w http.ResponseWriter, r *http.Request) {
	d.taskAction(w, r, taskOp{
		verb:  "cancel",
		run:   d.cfg.Store.CancelTask,
		legal: "only PENDING, ENQUEUED and PROCESSING tasks can be canceled",
		done: func(t *store.Task) string {
			if t.Status == store.StatusProcessing {
				return "Cancel requested: the worker running the task stops it and records CANCELED."
			}
			return "Task canceled."
		},
	})
}

func (d *Dashboard) replayTask(w http.ResponseWriter, r *http.Request) {
	d.taskAction(w, r, taskOp{
		verb:  "replay",
		run:   d.cfg.Store.ReplayTask,
		legal: "only DEAD, FAILED and CANCELED tasks can be replayed",
		done:  func(*store.Task) string { return "Task replayed: it is PENDING again with a fresh attempt budget." },
	})
}

// taskOp is an action on one task.
type taskOp struct {
	verb  string
	run   func(context.Context, uuid.UUID) (*store.Task, error)
	legal string                   // the rule an illegal transition broke
	done  func(*store.Task) string // the flash on success
}

// taskAction applies op to the task in the path and goes back to the page the form was
// on with the outcome. A malformed id is a 400 page; what the store refuses (an illegal
// transition, an unknown task, a conflict) goes back as an error flash.
func (d *Dashboard) taskAction(w http.ResponseWriter, r *http.Request, op taskOp) {
	id, err := parseTaskID(r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	back := "/tasks/" + id.String()
	t, err := op.run(r.Context(), id)
	if err == nil {
		d.redirectBack(w, r, back, flashOK, op.done(t))
		return
	}
	var msg string
	switch {
	case errors.Is(err, store.ErrIllegalTransition):
		msg = fmt.Sprintf("Cannot %s this task: %s.", op.verb, op.legal)
		if cur, gerr := d.cfg.Store.GetTask(r.Context(), id); gerr == nil {
			msg = fmt.Sprintf("Cannot %s this task: it is %s, and %s.", op.verb, cur.Status, op.legal)
		}
	case errors.Is(err, store.ErrNotFound):
		msg = fmt.Sprintf("No task has the id %s (it may have been removed by retention).", id)
	case errors.Is(err, store.ErrConflict):
		msg = fmt.Sprintf("Cannot %s this task: %v.", op.verb, err)
	default:
		status, m := d.errorStatus(r, err)
		d.renderError(w, r, status, m)
		return
	}
	d.redirectBack(w, r, back, flashError, msg)
}
