package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/cron"
	"github.com/rotaqueue/rota/internal/store"
)

// FuzzCreateTask feeds arbitrary bodies to the create-task decoder. It must never panic;
// a body it rejects must be a client error (never a 5xx); a body it accepts must yield
// params the store accepts as they are: Normalize passes and changes nothing, so no
// half-valid task can reach an adapter. Run as a plain test it checks the seeds.
func FuzzCreateTask(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"noop"}`,
		`{"kind":"email.send","queue":"mail","payload":{"to":"a@b.c"},"max_attempts":3,"priority":-5,"idempotency_key":"k","timeout_seconds":30}`,
		`{"kind":"noop","delay_seconds":1.5}`,
		`{"kind":"noop","group_key":"tenant-1"}`,
		`{"kind":"noop","group_key":""}`,
		`{"kind":"noop","group_key":"\u0000"}`,
		`{"kind":"noop","group_key":"` + strings.Repeat("x", 129) + `"}`,
		`{"kind":"noop","scheduled_for":"2030-01-02T03:04:05.123456789+02:00"}`,
		`{"kind":"noop","payload":null}`,
		`{"kind":"noop","payload":[1,2.5e3,-0,"\u00e9\ud83d\ude00",true,null]}`,
		`{"kind":"noop","payload":"\u0000"}`,
		`{"kind":"noop","payload":"\udc00"}`,
		`{"kind":"noop","payload":1e131071}`,
		`{"kind":"noop","payload":0.1e-16382}`,
		`{"kind":"noop","payload":1e-16384}`,
		`{"kind":"noop","max_attempts":0}`,
		`{"kind":"noop","delay_seconds":-1}`,
		`{"kind":"noop","delay_seconds":1,"scheduled_for":"2030-01-01T00:00:00Z"}`,
		`{"kind":"noop","scheduled_for":"0001-01-01T00:00:00Z"}`,
		`{"kind":"noop","scheduled_for":"1969-12-31T23:59:59.999999999Z"}`,
		`{"kind":"noop","scheduled_for":"1970-01-01T00:00:00Z"}`,
		`{"kind":"noop","scheduled_for":"1970-01-01T00:30:00+01:00"}`,
		`{"kind":"","queue":""}`,
		`{"kind":"a b"}`,
		`{"kind":"noop","extra":1}`,
		`{"kind":"noop"} trailing`,
		`{"kind":"noop","priority":1e40}`,
		`{"KIND":"noop"}`,
		`[]`,
		``,
		`{`,
		"{\"kind\":\"noop\",\"payload\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeCreateTask(body)
		if err != nil {
			var ae *apiError
			switch {
			case errors.As(err, &ae):
				if ae.status < 400 || ae.status > 499 {
					t.Fatalf("rejected %q with status %d", body, ae.status)
				}
			case !errors.Is(err, store.ErrInvalid):
				t.Fatalf("rejected %q with an error that maps to 500: %v", body, err)
			}
			return
		}
		again := p
		if err := again.Normalize(); err != nil {
			t.Fatalf("accepted %q, but Normalize rejects the params: %v", body, err)
		}
		if err := store.ValidateGroupKey(p.GroupKey); err != nil {
			t.Fatalf("accepted group key %q: %v", p.GroupKey, err)
		}
		if again.ID != p.ID || again.Queue != p.Queue || again.MaxAttempts != p.MaxAttempts || string(again.Payload) != string(p.Payload) {
			t.Fatalf("accepted %q with params that were not normalized: %+v", body, p)
		}
		if p.ID.Version() != 7 {
			t.Fatalf("id %s is not a v7 UUID", p.ID)
		}
		if !json.Valid(p.Payload) || len(p.Payload) > store.MaxPayloadBytes {
			t.Fatalf("accepted payload %q", p.Payload)
		}
		if err := store.CheckStorableJSON(p.Payload); err != nil {
			t.Fatalf("accepted a payload PostgreSQL rejects: %v", err)
		}
		var req createTaskRequest
		if err := decodeStrict(body, &req); err != nil {
			t.Fatalf("accepted %q, which does not decode again: %v", body, err)
		}
		if req.ScheduledFor != nil && p.ScheduledFor.Before(store.EarliestTime) {
			t.Fatalf("accepted %q with scheduled_for %s, before 1970 (a zero time reads as now)", body, p.ScheduledFor)
		}
	})
}

// FuzzRescheduleTime is FuzzCreateTask for the body of POST
// /api/schedules/{name}/reschedule: a time it accepts is a real one, in UTC, never a zero
// value (which the store reads as missing); a body it rejects is a client error.
func FuzzRescheduleTime(f *testing.F) {
	for _, seed := range []string{
		`{"next_run_at":"2030-01-02T03:04:05Z"}`,
		`{"next_run_at":"2030-01-02T03:04:05.5+02:00"}`,
		`{"next_run_at":"1970-01-01T00:00:00Z"}`,
		`{"next_run_at":"0001-01-01T00:00:00Z"}`,
		`{"next_run_at":"1969-12-31T23:59:59Z"}`,
		`{"next_run_at":""}`,
		`{"next_run_at":null}`,
		`{"next_run_at":5}`,
		`{}`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		at, err := parseRescheduleTime(body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status < 400 || ae.status > 499 {
				t.Fatalf("rejected %q with %v, not a client error", body, err)
			}
			return
		}
		if at.Before(store.EarliestTime) || at.Location() != time.UTC {
			t.Fatalf("accepted %q as %s", body, at)
		}
	})
}

// TestDecodeAnswersMatchHandler checks that the decoder the fuzz test exercises is the
// one behind POST /api/tasks: the same bodies succeed and fail with the same code.
func TestDecodeAnswersMatchHandler(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t)})
	for _, body := range []string{`{"kind":"noop"}`, `{"kind":"noop","max_attempts":0}`, `{"kind":"noop"`, `{"kind":"noop","payload":"\u0000"}`} {
		_, err := decodeCreateTask([]byte(body))
		res := c.do("POST", "/api/tasks", body)
		if (err == nil) != (res.status == http.StatusCreated) {
			t.Fatalf("%s: decode error %v, handler status %d", body, err, res.status)
		}
	}
}

// FuzzCreateSchedule is FuzzCreateTask for POST /api/schedules: a body the decoder
// accepts yields params every later check accepts (the name rule, cron.Parse, the zone,
// the template's Normalize, unchanged); a body it rejects is a client error.
func FuzzCreateSchedule(f *testing.F) {
	for _, seed := range []string{
		`{"name":"n","cron_spec":"* * * * *","task":{"kind":"noop"}}`,
		`{"name":"nightly.report-1","kind":"task","cron_spec":" 30 3 * * 1-5 ","timezone":"Europe/Berlin","task":{"kind":"k","queue":"q","payload":{"a":[1]},"max_attempts":3},"enabled":false,"catch_up":"ALL"}`,
		`{"name":"n","cron_spec":"@Daily","task":{"kind":"noop","payload":null}}`,
		`{"name":"n","cron_spec":"61 * * * *","task":{"kind":"noop"}}`,
		`{"name":"n","cron_spec":"0 0 30 2 *","task":{"kind":"noop"}}`,
		`{"name":"n","cron_spec":"@reboot","task":{"kind":"noop"}}`,
		`{"name":"n","cron_spec":"*/0 * * * *","task":{"kind":"noop"}}`,
		`{"name":"n","cron_spec":"* * * *","task":{"kind":"noop"}}`,
		`{"name":"n","cron_spec":"@daily","timezone":"Local","task":{"kind":"noop"}}`,
		`{"name":"n","cron_spec":"@daily","timezone":"","task":{"kind":"noop"}}`,
		`{"name":"a:b","cron_spec":"@daily","task":{"kind":"noop"}}`,
		`{"name":"n","kind":"flow","cron_spec":"@daily","task":{"kind":"noop"}}`,
		`{"name":"n","cron_spec":"@daily","task":{"kind":"noop","max_attempts":0}}`,
		`{"name":"n","cron_spec":"@daily","task":{"kind":"noop","payload":"\u0000"}}`,
		`{"name":"n","cron_spec":"@daily","task":{}}`,
		`{"name":"n","cron_spec":"@daily","catch_up":"most","task":{"kind":"noop"}}`,
		`{"name":"n","cron_spec":"@daily"}`,
		`{}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeCreateSchedule(body)
		if err != nil {
			var ae *apiError
			switch {
			case errors.As(err, &ae):
				if ae.status < 400 || ae.status > 499 {
					t.Fatalf("rejected %q with status %d", body, ae.status)
				}
			case !errors.Is(err, store.ErrInvalid):
				t.Fatalf("rejected %q with an error that maps to 500: %v", body, err)
			}
			return
		}
		if err := store.ValidateScheduleName(p.Name); err != nil {
			t.Fatalf("accepted name %q: %v", p.Name, err)
		}
		spec, err := cron.Parse(p.CronSpec)
		if err != nil || spec.String() != p.CronSpec {
			t.Fatalf("accepted spec %q: %v", p.CronSpec, err)
		}
		if _, err := cron.LoadLocation(p.Timezone); err != nil || p.Timezone == "" {
			t.Fatalf("accepted zone %q: %v", p.Timezone, err)
		}
		if p.Kind != store.ScheduleKindTask {
			t.Fatalf("kind %q", p.Kind)
		}
		switch p.CatchUp {
		case store.CatchUpSkip, store.CatchUpOne, store.CatchUpAll:
		default:
			t.Fatalf("accepted catch_up %q", p.CatchUp)
		}
		tp := store.CreateParams{Kind: p.Task.Kind, Queue: p.Task.Queue, Payload: p.Task.Payload, MaxAttempts: p.Task.MaxAttempts}
		if err := tp.Normalize(); err != nil {
			t.Fatalf("accepted a template Normalize rejects: %v", err)
		}
		if tp.Queue != p.Task.Queue || tp.MaxAttempts != p.Task.MaxAttempts || string(tp.Payload) != string(p.Task.Payload) {
			t.Fatalf("accepted a template that was not normalized: %+v", p.Task)
		}
		if err := store.CheckStorableJSON(p.Task.Payload); err != nil {
			t.Fatalf("accepted a payload PostgreSQL rejects: %v", err)
		}
	})
}

// FuzzCreateFlow feeds arbitrary bodies to the create-flow decoder: never a panic, a
// rejection is a client error (never a 5xx), and accepted params are what the store
// accepts as they are (Normalize again passes and changes nothing), with every step's
// payload storable. Run as a plain test it checks the seeds.
func FuzzCreateFlow(f *testing.F) {
	for _, seed := range []string{
		`{"steps":[{"name":"a","kind":"noop"}]}`,
		`{"name":"etl","queue":"q","idempotency_key":"k","steps":[{"name":"extract","kind":"echo","payload":{"output":[1,2]}},` +
			`{"name":"transform","kind":"echo","depends_on":["extract"],"for_each":"extract","queue":"other","max_attempts":3,"priority":2,"timeout_seconds":5},` +
			`{"name":"load","kind":"echo","depends_on":["transform"]}]}`,
		`{"steps":[{"name":"a","kind":"noop","depends_on":["b"]},{"name":"b","kind":"noop","depends_on":["a"]}]}`,
		`{"steps":[{"name":"a","kind":"noop","depends_on":["a"]}]}`,
		`{"steps":[{"name":"a","kind":"noop","for_each":"a"}]}`,
		`{"steps":[{"name":"a","kind":"noop"},{"name":"a","kind":"noop"}]}`,
		`{"steps":[{"name":"a","kind":"noop","payload":"\u0000"}]}`,
		`{"steps":[{"name":"a","kind":"noop","max_attempts":0}]}`,
		`{"steps":[{"name":"","kind":"noop"}]}`,
		`{"steps":[]}`,
		`{"queue":"a b","steps":[{"name":"a","kind":"noop"}]}`,
		`{"name":"1x","steps":[{"name":"a","kind":"noop"}]}`,
		`{"steps":[{"name":"a","kind":"noop","depends_on":["b","b"]},{"name":"b","kind":"noop"}]}`,
		`{"steps":null}`,
		`{"steps":[{"name":"a","kind":"noop","extra":1}]}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodeCreateFlow(body)
		if err != nil {
			var ae *apiError
			switch {
			case errors.As(err, &ae):
				if ae.status < 400 || ae.status > 499 {
					t.Fatalf("rejected %q with status %d", body, ae.status)
				}
			case !errors.Is(err, store.ErrInvalid):
				t.Fatalf("rejected %q with an error that maps to 500: %v", body, err)
			}
			return
		}
		again := p
		again.Steps = append([]store.StepParams(nil), p.Steps...)
		if err := again.Normalize(); err != nil {
			t.Fatalf("accepted %q, but Normalize rejects the params: %v", body, err)
		}
		if again.ID != p.ID || again.Queue != p.Queue || len(again.Steps) != len(p.Steps) {
			t.Fatalf("accepted %q with params that were not normalized: %+v", body, p)
		}
		for i, st := range p.Steps {
			if st.Queue == "" || st.MaxAttempts < 1 || !json.Valid(st.Payload) || len(st.Payload) > store.MaxPayloadBytes {
				t.Fatalf("accepted step %d not normalized: %+v", i, st)
			}
			if err := store.CheckStorableJSON(st.Payload); err != nil {
				t.Fatalf("accepted a step payload PostgreSQL rejects: %v", err)
			}
		}
	})
}
