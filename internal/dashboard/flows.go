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

type flowFilter struct {
	Status string // "" = any
	Name   string
	Cursor string
}

type flowListView struct {
	Filter flowFilter
	Flows  []*store.Flow
	pager
}

// parseFlowFilter reads the query of /flows; a bad status, name or cursor is a 400.
func parseFlowFilter(q url.Values) (flowFilter, store.FlowListParams, error) {
	f := flowFilter{
		Status: strings.ToUpper(strings.TrimSpace(q.Get("status"))),
		Name:   strings.TrimSpace(q.Get("name")),
		Cursor: strings.TrimSpace(q.Get("cursor")),
	}
	p := store.FlowListParams{Name: f.Name, Cursor: f.Cursor, Limit: pageSize}
	if f.Status != "" {
		st := store.FlowStatus(f.Status)
		if !st.Valid() {
			return f, p, badRequest("Unknown flow status %q: choose one of %s.", q.Get("status"), flowStatusNames())
		}
		p.Statuses = []store.FlowStatus{st}
	}
	if f.Cursor != "" {
		if _, err := store.DecodeTaskCursor(f.Cursor); err != nil {
			return f, p, badRequest("The page cursor %q is malformed; start again from the first page.", f.Cursor)
		}
	}
	if _, err := p.Check(); err != nil {
		return f, p, err // ErrInvalid: a 400 with the store's words
	}
	return f, p, nil
}

func flowStatusNames() string {
	names := make([]string, len(store.AllFlowStatuses))
	for i, st := range store.AllFlowStatuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

func (f flowFilter) query(cursor string) string {
	return queryString(map[string]string{"status": f.Status, "name": f.Name, "cursor": cursor})
}

func (d *Dashboard) flowList(w http.ResponseWriter, r *http.Request) {
	f, p, err := parseFlowFilter(r.URL.Query())
	v := flowListView{Filter: f}
	if err == nil {
		var next string
		v.Flows, next, err = d.cfg.Store.ListFlows(r.Context(), p)
		v.pager = pageLinks(func(c string) string { return "/flows" + f.query(c) }, f.Cursor, next)
	}
	d.renderPage(w, r, err, "flows", pageData{Title: "Flows", Nav: "flows", Data: v})
}

type flowView struct {
	Flow      *store.Flow
	Graph     flowGraph
	Steps     []flowStepRow
	CanCancel bool
	CanReplay bool
}

// flowStepRow is a step in the table under the graph.
type flowStepRow struct {
	store.FlowStep
	Progress string // for_each only
	// Tasks are the first maxStepTaskLinks of the step's tasks (a fan-out may have
	// thousands); More is how many are left out.
	Tasks []stepTaskLink
	More  int
}

type stepTaskLink struct {
	ID     uuid.UUID
	Label  string // "task …6f2f2f2f2f2f" for a single task (ids are time-ordered: the end differs), "#3" for element 3 of a for_each
	Status store.Status
}

// maxStepTaskLinks bounds the task links a step's row shows.
const maxStepTaskLinks = 20

func parseFlowID(raw string) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		return uuid.Nil, badRequest("%q is not a flow id: flow ids are UUIDs such as 0190d6a4-7a4c-7d4e-8c8c-6f2f2f2f2f2f.", raw)
	}
	return id, nil
}

func (d *Dashboard) flowPage(w http.ResponseWriter, r *http.Request) {
	id, err := parseFlowID(r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	f, err := d.cfg.Store.GetFlow(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("No flow has the id %s (it may have been removed by retention).", id)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	v := flowView{Flow: f, Graph: newFlowGraph(f.Steps),
		CanCancel: f.Status == store.FlowRunning,
		CanReplay: f.Status == store.FlowFailed || f.Status == store.FlowCanceled}
	for _, st := range f.Steps {
		row := flowStepRow{FlowStep: st}
		if st.ForEach != "" {
			row.Progress = forEachProgress(st)
		}
		for i, tid := range st.TaskIDs {
			if i == maxStepTaskLinks {
				row.More = len(st.TaskIDs) - i
				break
			}
			link := stepTaskLink{ID: tid, Label: "task …" + tid.String()[24:]}
			if st.ForEach != "" {
				link.Label = fmt.Sprintf("#%d", i)
			}
			if i < len(st.TaskStatuses) {
				link.Status = st.TaskStatuses[i]
			}
			row.Tasks = append(row.Tasks, link)
		}
		v.Steps = append(v.Steps, row)
	}
	title := "Flow " + id.String()
	if f.Name != "" {
		title = "Flow " + f.Name
	}
	d.render(w, r, http.StatusOK, "flow", pageData{Title: title, Nav: "flows", Data: v})
}

func (d *Dashboard) cancelFlow(w http.ResponseWriter, r *http.Request) {
	d.flowAction(w, r, "cancel", d.cfg.Store.CancelFlow, "only a RUNNING flow can be canceled",
		"Flow canceled: its waiting steps are CANCELED and its running tasks were asked to stop.")
}

func (d *Dashboard) replayFlow(w http.ResponseWriter, r *http.Request) {
	d.flowAction(w, r, "replay", d.cfg.Store.ReplayFlow, "only a FAILED or CANCELED flow can be replayed",
		"Flow replayed: it is RUNNING again; its failed and canceled steps run again.")
}

// flowAction applies run to the flow in the path and goes back with the outcome, as
// taskAction does for tasks.
func (d *Dashboard) flowAction(w http.ResponseWriter, r *http.Request, verb string,
	run func(context.Context, uuid.UUID) (*store.Flow, error), legal, done string) {
	id, err := parseFlowID(r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	back := "/flows/" + id.String()
	_, err = run(r.Context(), id)
	if err == nil {
		d.redirectBack(w, r, back, flashOK, done)
		return
	}
	var msg string
	switch {
	case errors.Is(err, store.ErrIllegalTransition):
		msg = fmt.Sprintf("Cannot %s this flow: %s.", verb, legal)
		if cur, gerr := d.cfg.Store.GetFlow(r.Context(), id); gerr == nil {
			msg = fmt.Sprintf("Cannot %s this flow: it is %s, and %s.", verb, cur.Status, legal)
		}
	case errors.Is(err, store.ErrNotFound):
		msg = fmt.Sprintf("No flow has the id %s (it may have been removed by retention).", id)
	case errors.Is(err, store.ErrConflict):
		msg = fmt.Sprintf("Cannot %s this flow now: %v.", verb, err)
	default:
		status, m := d.errorStatus(r, err)
		d.renderError(w, r, status, m)
		return
	}
	d.redirectBack(w, r, back, flashError, msg)
}
