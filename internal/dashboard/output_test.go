package dashboard

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
)

// TestTaskPageShowsOutput: the task page shows a SUCCEEDED task's output, indented and
// escaped (never markup), in its live region; a task without one says so.
func TestTaskPageShowsOutput(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		task := createTask(t, st, store.CreateParams{Kind: "report"})
		pending := createTask(t, st, store.CreateParams{Kind: "report", ScheduledFor: time.Now().Add(time.Hour)})
		plain := finish(t, st, store.CreateParams{Kind: "plain"}, store.StatusSucceeded)
		c := claimTask(t, st, task, time.Minute)
		record(t, st, c, store.Outcome{Kind: store.Succeed,
			Output: json.RawMessage(`{"rows":3,"note":"<script>alert(1)</script>"}`)}, store.StatusSucceeded)
		b := newBrowser(t, newDashboard(t, Config{Store: st}))

		p := b.get("/tasks/"+task.ID.String()).want(t, http.StatusOK)
		p.contains(t, `<h2 id="output-heading">Output</h2>`, `<pre id="task-output" class="payload">{`,
			`&#34;rows&#34;: 3`, `&lt;script&gt;alert(1)&lt;/script&gt;`)
		p.lacks(t, "<script>alert(1)</script>")
		// The live region carries it, so it appears while the page is watched.
		b.partial("/tasks/"+task.ID.String()).contains(t, `<pre id="task-output" class="payload">`)

		b.get("/tasks/"+plain.ID.String()).contains(t, `<p id="task-output" class="muted">None: the handler returned no output.</p>`)
		b.get("/tasks/"+pending.ID.String()).contains(t, `<p id="task-output" class="muted">None yet:`)
	})
}
