package dashboard

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/testutil/adapters"
	"github.com/rotaqueue/rota/internal/workers"
)

func registerWorker(t *testing.T, st store.Store, w store.Worker) {
	t.Helper()
	if err := st.RegisterWorker(ctx(t), store.RegisterParams{Worker: w}); err != nil {
		t.Fatalf("RegisterWorker: %v", err)
	}
}

// The Workers page lists the live workers with their host, queues, kinds (unknown for an
// HTTP-protocol worker), running / concurrency, version and last seen; ?queue= filters.
func TestWorkersPage(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		registerWorker(t, st, store.Worker{ID: "go-1", Host: "box-a", PID: 7, Version: "v1.2.3", Mode: "poll",
			Queues: []string{"default", "emails"}, Kinds: []string{"noop", "sleep"}, Concurrency: 100, Running: 3})
		registerWorker(t, st, store.Worker{ID: "py-1", Host: "10.0.0.9", Mode: "http", Queues: []string{"emails"}})
		b := newBrowser(t, newDashboard(t, Config{Store: st}))
		p := b.get("/workers").want(t, http.StatusOK)
		p.contains(t, `data-nav="workers" href="/workers" aria-current="page"`, `<tr data-worker="go-1">`,
			`<td class="host">box-a <span class="muted">pid 7</span></td>`, `<td class="kinds">noop, sleep</td>`,
			`<td class="running num">3 / 100</td>`, `<td class="version">v1.2.3</td>`,
			`<tr data-worker="py-1">`, `<td class="kinds"><span class="muted">unknown</span></td>`, `<span class="badge badge-http">http</span>`)
		b.get("/workers?queue=default").want(t, http.StatusOK).contains(t, `data-worker="go-1"`).lacks(t, `data-worker="py-1"`)
		b.partial("/workers").want(t, http.StatusOK).contains(t, `data-worker="py-1"`)
	})
}

// The overview flags a queue with due tasks and no live worker, and counts each queue's
// live workers.
func TestOverviewFlagsUnservedQueues(t *testing.T) {
	adapters.Each(t, func(t *testing.T, st store.Store) {
		createTask(t, st, store.CreateParams{Queue: "orphans", Kind: "noop"})
		createTask(t, st, store.CreateParams{Queue: "default", Kind: "noop"})
		registerWorker(t, st, store.Worker{ID: "w", Queues: []string{"default"}, Kinds: []string{"noop"}})
		// A cache that never reuses an answer: the page shows what the registry holds now.
		d := newDashboard(t, Config{Store: st, Workers: workers.NewCache(st, workers.CacheConfig{TTL: 1})})
		p := newBrowser(t, d).get("/").want(t, http.StatusOK)
		p.contains(t, `id="unserved-warning"`, `No live worker serves`, `<strong>orphans</strong>`,
			`<span class="badge badge-unserved" title="due tasks and no live worker">0: unserved</span>`,
			`<a href="/workers?queue=default">1</a>`)

		// The queue list flags it too.
		q := newBrowser(t, d).get("/queues").want(t, http.StatusOK)
		if r := regexpFind(`(?s)(<tr data-queue="orphans">.*?</tr>)`, q.body); !strings.Contains(r, `0: unserved`) {
			t.Fatalf("the queue list does not flag orphans:\n%s", r)
		}
		if r := regexpFind(`(?s)(<tr data-queue="default">.*?</tr>)`, q.body); !strings.Contains(r, `<a href="/workers?queue=default">1</a>`) {
			t.Fatalf("the queue list does not count default's worker:\n%s", r)
		}

		registerWorker(t, st, store.Worker{ID: "w2", Queues: []string{"orphans"}})
		newBrowser(t, d).get("/").want(t, http.StatusOK).lacks(t, `id="unserved-warning"`, `badge-unserved`)
		newBrowser(t, d).get("/queues").want(t, http.StatusOK).lacks(t, `badge-unserved`)
	})
}
