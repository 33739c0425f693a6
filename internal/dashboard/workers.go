package dashboard

import (
	"net/http"

	"github.com/rotaqueue/rota/internal/store"
)

type workerListView struct {
	Workers []store.Worker
	Queue   string // the ?queue filter, "" for all
}

// workerList is the Workers page: the live workers of the registry (DESIGN.md section
// 12), read fresh (not from the cache), of one queue with ?queue=.
func (d *Dashboard) workerList(w http.ResponseWriter, r *http.Request) {
	queue := r.URL.Query().Get("queue")
	if queue != "" && store.ValidateName("queue", queue) != nil {
		queue = "" // a name that breaks the rule names no queue: show them all
	}
	ws, err := d.cfg.Store.ListWorkers(r.Context(), store.WorkerListParams{Queue: queue})
	d.renderPage(w, r, err, "workers", pageData{Title: "Workers", Nav: "workers", Data: workerListView{Workers: ws, Queue: queue}})
}
