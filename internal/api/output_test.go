package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// noOutput reports whether a task JSON's "output" is null (decoded: the text null).
func noOutput(raw []byte) bool { return string(raw) == "null" }

// TestCompleteWithOutput: complete takes "output" (DESIGN.md section 10, "Results"),
// and the task JSON shows it everywhere a task is shown; "output" is null when none.
func TestCompleteWithOutput(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st})
		const out = `{"rows": [1, 2, 3], "file": "s3://bucket/out.csv"}`

		task := c.createTask(map[string]any{"kind": "etl", "queue": "outs"})
		if !noOutput(task.Output) {
			t.Fatalf("a new task has output %s", task.Output)
		}
		claimed := c.claimOne("outs")
		var done taskJSON
		c.do("POST", "/api/tasks/"+task.ID.String()+"/complete",
			`{"lease_token": "`+claimed.LeaseToken.String()+`", "output": `+out+`}`).want(t, http.StatusOK, &done)
		if done.Status != store.StatusSucceeded || !sameJSON(t, done.Output, out) {
			t.Fatalf("complete answered %s with output %s, want SUCCEEDED with %s", done.Status, done.Output, out)
		}
		if got := c.getTask(task.ID.String()); !sameJSON(t, got.Output, out) {
			t.Fatalf("GET: output %s, want %s", got.Output, out)
		}
		var list taskListJSON
		c.do("GET", "/api/tasks?queue=outs&status=SUCCEEDED", nil).want(t, http.StatusOK, &list)
		if len(list.Tasks) != 1 || !sameJSON(t, list.Tasks[0].Output, out) {
			t.Fatalf("list: %+v, want the task with its output", list.Tasks)
		}

		// No output, or null: "output" is null in the task JSON, present all the same.
		for _, body := range []string{`{"lease_token": "%s"}`, `{"lease_token": "%s", "output": null}`} {
			plain := c.createTask(map[string]any{"kind": "etl", "queue": "outs"})
			tok := c.claimOne("outs").LeaseToken.String()
			c.do("POST", "/api/tasks/"+plain.ID.String()+"/complete", strings.Replace(body, "%s", tok, 1)).want(t, http.StatusOK, nil)
			res := c.do("GET", "/api/tasks/"+plain.ID.String(), nil)
			if res.status != http.StatusOK || !strings.Contains(string(res.body), `"output":null`) {
				t.Fatalf("GET of a task completed with %s: %d %s, want \"output\":null", body, res.status, res.body)
			}
		}

		// JSON that PostgreSQL cannot hold is 400, and nothing changes.
		bad := c.createTask(map[string]any{"kind": "etl", "queue": "outs"})
		badTok := c.claimOne("outs").LeaseToken.String()
		c.do("POST", "/api/tasks/"+bad.ID.String()+"/complete",
			`{"lease_token": "`+badTok+`", "output": "\u0000"}`).wantError(t, http.StatusBadRequest, codeInvalidRequest)
		if got := c.getTask(bad.ID.String()); got.Status != store.StatusProcessing {
			t.Fatalf("after an unstorable output the task is %s, want PROCESSING", got.Status)
		}
	})
}

// TestCompleteOutputTooLarge: an output over 1 MiB is 413 payload_too_large and changes
// nothing (the task stays PROCESSING under its lease, which still completes it); one of
// exactly 1 MiB fits, even on a server whose other routes take far smaller bodies;
// indentation does not count against the limit.
func TestCompleteOutputTooLarge(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		c := newClient(t, Config{Store: st, MaxBodyBytes: 4 << 10})
		task := c.createTask(map[string]any{"kind": "big"})
		claimed := c.claimOne("default")
		id, token := task.ID.String(), claimed.LeaseToken.String()
		complete := func(output string) response {
			return c.do("POST", "/api/tasks/"+id+"/complete", `{"lease_token": "`+token+`", "output": `+output+`}`)
		}
		str := func(n int) string { return `"` + strings.Repeat("x", n-2) + `"` } // n bytes of JSON

		e := complete(str(store.MaxOutputBytes+1)).wantError(t, http.StatusRequestEntityTooLarge, codePayloadTooLarge)
		if !strings.Contains(e.Message, "output") {
			t.Fatalf("413 message %q does not name the output", e.Message)
		}
		// A body beyond the route's own limit: 413 from the body limit.
		complete(str(completeBodyBytes+1)).wantError(t, http.StatusRequestEntityTooLarge, codePayloadTooLarge)

		after := c.getTask(id)
		if after.Status != store.StatusProcessing || !noOutput(after.Output) || after.LeaseExpiresAt == nil {
			t.Fatalf("after a 413 the task is %s (output %d bytes); want PROCESSING, unchanged", after.Status, len(after.Output))
		}
		c.do("POST", "/api/tasks/"+id+"/heartbeat", map[string]any{"lease_token": token}).want(t, http.StatusOK, nil)

		// Exactly 1 MiB once compacted ({"a":"xx..."}), sent with spaces that make it more.
		limit := `{"a": ` + str(store.MaxOutputBytes-6) + ` }`
		var done taskJSON
		complete(limit).want(t, http.StatusOK, &done)
		if done.Status != store.StatusSucceeded || !sameJSON(t, done.Output, limit) {
			t.Fatalf("complete with a 1 MiB output: %s, %d bytes", done.Status, len(done.Output))
		}
	})
}

// TestTaskSchemaMatchesAnswer holds the Task schema of openapi.json (output included) to
// the fields a GET of a plain task sends.
func TestTaskSchemaMatchesAnswer(t *testing.T) {
	c := newClient(t, Config{Store: memoryStore(t)})
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	task := c.createTask(map[string]any{"kind": "noop"})
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(c.do("GET", "/api/tasks/"+task.ID.String(), nil).body, &raw); err != nil {
		t.Fatal(err)
	}
	s := doc.Components.Schemas["Task"]
	sent := slices.Sorted(maps.Keys(raw))
	// A flow step's task adds these optional fields (TestOpenAPIMatchesRoutes holds the
	// schema to a for_each step task's answer); a plain task sends none of them.
	stepOnly := []string{"flow_id", "index", "inputs", "item", "step"}
	documented := slices.DeleteFunc(slices.Sorted(maps.Keys(s.Properties)), func(f string) bool {
		return slices.Contains(stepOnly, f)
	})
	required := slices.Sorted(slices.Values(s.Required))
	if !slices.Contains(sent, "output") || !slices.Equal(sent, documented) || !slices.Equal(sent, required) {
		t.Errorf("Task: the server sends %v; the schema documents %v and requires %v", sent, documented, required)
	}
}
