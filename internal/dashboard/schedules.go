package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rotaqueue/rota/internal/cron"
	"github.com/rotaqueue/rota/internal/store"
)

type scheduleListView struct {
	Schedules []*store.Schedule
}

func (d *Dashboard) scheduleList(w http.ResponseWriter, r *http.Request) {
	list, err := d.cfg.Store.ListSchedules(r.Context())
	d.renderPage(w, r, err, "schedules", pageData{Title: "Schedules", Nav: "schedules", Data: scheduleListView{Schedules: list}})
}

type scheduleView struct {
	Schedule  *store.Schedule
	NextLocal string // next_run_at in the schedule's zone, as the reschedule field shows it
	Runs      []*store.Task
	pager
}

// scheduleName reads the name in the path. A name that breaks the naming rule names no
// schedule, so it is not found, as in the API.
func scheduleName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if store.ValidateScheduleName(name) != nil {
		return "", notFound("No schedule is named %q.", name)
	}
	return name, nil
}

func (d *Dashboard) schedulePage(w http.ResponseWriter, r *http.Request) {
	name, err := scheduleName(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	sc, err := d.cfg.Store.GetSchedule(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("No schedule is named %q.", name)
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	v := scheduleView{Schedule: sc, NextLocal: localInput(sc.NextRunAt, sc.Timezone)}
	cursor := strings.TrimSpace(r.URL.Query().Get("cursor"))
	if cursor != "" {
		if _, derr := store.DecodeTaskCursor(cursor); derr != nil {
			err = badRequest("The page cursor %q is malformed; start again from the first page.", cursor)
		}
	}
	if err == nil {
		var next string
		v.Runs, next, err = d.cfg.Store.ListScheduleRuns(r.Context(), store.ScheduleRunsParams{Name: name, Limit: pageSize, Cursor: cursor})
		v.pager = pageLinks(func(c string) string {
			return "/schedules/" + url.PathEscape(name) + queryString(map[string]string{"cursor": c})
		}, cursor, next)
	}
	d.renderPage(w, r, err, "schedule", pageData{Title: "Schedule " + name, Nav: "schedules", Data: v})
}

// localInput formats t as the reschedule field takes it: wall time in the zone.
func localInput(t time.Time, zone string) string {
	loc, err := cron.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format("2006-01-02T15:04")
}

func (d *Dashboard) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	d.scheduleAction(w, r, func(ctx context.Context, name string) (string, error) {
		if _, err := d.cfg.Store.PauseSchedule(ctx, name); err != nil {
			return "", err
		}
		return fmt.Sprintf("Schedule %s paused: it does not fire until resumed.", name), nil
	})
}

func (d *Dashboard) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	d.scheduleAction(w, r, func(ctx context.Context, name string) (string, error) {
		sc, err := d.cfg.Store.ResumeSchedule(ctx, name)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Schedule %s resumed: next run %s.", name, sc.NextRunAt.UTC().Format(time.RFC3339)), nil
	})
}

func (d *Dashboard) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	d.scheduleAction(w, r, func(ctx context.Context, name string) (string, error) {
		t, err := d.cfg.Store.TriggerSchedule(ctx, name)
		if errors.Is(err, store.ErrScheduleOfKindFlow) {
			f, err := d.cfg.Store.TriggerScheduleFlow(ctx, name)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Schedule %s triggered: flow %s started (the next run is unchanged).", name, f.ID), nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Schedule %s triggered: task %s enqueued (the next run is unchanged).", name, t.ID), nil
	})
}

// rescheduleSchedule sets next_run_at from the form's next_run_at: RFC 3339 with an
// offset, or a wall time ("2030-01-02T15:04", seconds optional) in the schedule's zone.
func (d *Dashboard) rescheduleSchedule(w http.ResponseWriter, r *http.Request) {
	d.scheduleAction(w, r, func(ctx context.Context, name string) (string, error) {
		sc, err := d.cfg.Store.GetSchedule(ctx, name)
		if err != nil {
			return "", err
		}
		at, err := parseNextRun(r.PostForm.Get("next_run_at"), sc.Timezone)
		if err != nil {
			return "", err
		}
		sc, err = d.cfg.Store.RescheduleSchedule(ctx, name, at)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Schedule %s rescheduled: next run %s.", name, sc.NextRunAt.UTC().Format(time.RFC3339)), nil
	})
}

func parseNextRun(raw, zone string) (time.Time, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return time.Time{}, badRequest("Enter the next run time, e.g. 2030-01-02T15:04 (in the schedule's zone) or 2030-01-02T15:04:00Z.")
	}
	at, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		loc, lerr := cron.LoadLocation(zone)
		if lerr != nil {
			return time.Time{}, fmt.Errorf("schedule zone %q: %w", zone, lerr)
		}
		for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05"} {
			if at, err = time.ParseInLocation(layout, raw, loc); err == nil {
				break
			}
		}
	}
	if err != nil {
		return time.Time{}, badRequest("%q is not a time: use 2030-01-02T15:04 (in the schedule's zone, %s) or RFC 3339 such as 2030-01-02T15:04:00Z.", raw, zone)
	}
	if at.Before(store.EarliestTime) {
		// As in the API: a year-1 time is a zero value, which the store reads as missing.
		return time.Time{}, badRequest("%q is before 1970-01-01: enter a later time (a past one is due at once).", raw)
	}
	return at.UTC(), nil
}

// scheduleAction runs op on the schedule in the path and goes back with its outcome. Bad
// input is a 400 page; an unknown schedule goes back as an error flash.
func (d *Dashboard) scheduleAction(w http.ResponseWriter, r *http.Request, op func(ctx context.Context, name string) (string, error)) {
	name, err := scheduleName(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	back := "/schedules/" + url.PathEscape(name)
	msg, err := op(r.Context(), name)
	if err == nil {
		d.redirectBack(w, r, back, flashOK, msg)
		return
	}
	if errors.Is(err, store.ErrNotFound) {
		d.redirectBack(w, r, "/schedules", flashError, fmt.Sprintf("No schedule is named %q (it may have been deleted).", name))
		return
	}
	d.fail(w, r, err)
}
