// Package handlers implements Rota's built-in task kinds (DESIGN.md section 7): noop,
// sleep, fail, http and echo. `rota dev` and `rota worker` register them; they are also handy
// for trying Rota out and for end-to-end tests.
package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rotaqueue/rota/internal/runtime"
)

// Config configures the built-in handlers.
type Config struct {
	// AllowHosts limits the hosts the http kind may call (ROTA_HTTP_ALLOW_HOSTS, see
	// ParseAllowHosts). An entry is a host name or IP ("api.example.com", any port), a
	// host with a port ("127.0.0.1:8080", that port only) or "*.example.com" (any
	// subdomain). Empty allows any host. With it set, a payload's Host header must
	// name the url's own host.
	AllowHosts []string
	// DenyPrivate makes the http kind refuse to connect to loopback, private, link-local,
	// carrier-grade NAT, unspecified, multicast and cloud-metadata addresses
	// (ROTA_HTTP_DENY_PRIVATE). The address checked is the one dialed, after DNS, for the
	// URL and every redirect; proxies from the environment are then not used.
	DenyPrivate bool
}

// Register adds the noop, sleep, fail, http and echo kinds to mux.
func Register(mux *runtime.Mux, cfg Config) {
	mux.HandleFunc("noop", noop)
	mux.HandleFunc("echo", echo)
	mux.HandleFunc("sleep", sleep)
	mux.HandleFunc("fail", fail)
	mux.Handle("http", newHTTPHandler(cfg))
}

// noop succeeds at once.
func noop(context.Context, *runtime.Job) error { return nil }

// sleep waits payload.ms milliseconds, or until ctx ends (a cancel, a timeout, shutdown).
func sleep(ctx context.Context, job *runtime.Job) error {
	var p struct {
		MS int64 `json:"ms"`
	}
	if err := decode(job, &p); err != nil {
		return err
	}
	if p.MS < 0 {
		return runtime.Permanent(fmt.Errorf("sleep: ms must not be negative, got %d", p.MS))
	}
	t := time.NewTimer(time.Duration(p.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sleep interrupted: %w", ctx.Err())
	}
}

// fail fails the first payload.times attempts, then succeeds; without "times" it fails
// every attempt. With "permanent": true the failure is permanent (FAILED, no retry).
func fail(_ context.Context, job *runtime.Job) error {
	var p struct {
		Times     *int `json:"times"`
		Permanent bool `json:"permanent"`
	}
	if err := decode(job, &p); err != nil {
		return err
	}
	attempt := job.Task.AttemptCount // counts the current attempt, 1-based
	if p.Times != nil && attempt > *p.Times {
		return nil
	}
	err := fmt.Errorf("fail: attempt %d failed on purpose", attempt)
	if p.Times != nil {
		err = fmt.Errorf("fail: attempt %d of the first %d failed on purpose", attempt, *p.Times)
	}
	if p.Permanent {
		return runtime.Permanent(err)
	}
	return err
}

// echo succeeds with an output (DESIGN.md section 10): payload.output when the payload
// has an "output" field, otherwise what the task was given, {"payload", "inputs", "item",
// "index"}, with "inputs" only for a flow step and "item" and "index" only for a task of
// a for_each step. It is the smallest kind that shows a flow's data moving: a first step
// sets the array a for_each fans out over, and each later step echoes what reached it.
func echo(_ context.Context, job *runtime.Job) error {
	var p struct {
		Output json.RawMessage `json:"output"`
	}
	if err := decode(job, &p); err != nil {
		return err
	}
	if p.Output != nil { // present, null included
		return job.SetOutput(p.Output)
	}
	t := job.Task
	given := struct {
		Payload json.RawMessage `json:"payload"`
		Inputs  json.RawMessage `json:"inputs,omitempty"`
		Item    json.RawMessage `json:"item,omitempty"`
		Index   *int            `json:"index,omitempty"`
	}{Payload: t.Payload, Inputs: t.Inputs, Item: t.Item, Index: t.Index}
	if len(bytes.TrimSpace(given.Payload)) == 0 {
		given.Payload = json.RawMessage(`{}`)
	}
	return job.SetOutput(given)
}

// decode unmarshals the task's payload into v. A payload that does not fit is a
// permanent error: retrying the same bytes cannot help.
func decode(job *runtime.Job, v any) error {
	payload := bytes.TrimSpace(job.Task.Payload)
	if len(payload) == 0 {
		return nil
	}
	if err := json.Unmarshal(payload, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			err = fmt.Errorf("field %q: cannot use a JSON %s as %s", typeErr.Field, typeErr.Value, typeErr.Type)
		}
		return runtime.Permanent(fmt.Errorf("%s: invalid payload: %w", job.Task.Kind, err))
	}
	return nil
}
