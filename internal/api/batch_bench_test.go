package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
)

// BenchmarkCreateTaskBatch times POST /api/tasks/batch of 1,000 tasks in process (no
// network), on the memory store emptied every 100 batches outside the timer: the
// handler's own work (reading, decoding and checking the body, encoding the answer) and
// the memory store's. The bench/ insert workload's "HTTP batch" case sends the same
// body to a PostgreSQL store.
//
//	go test -run '^$' -bench CreateTaskBatch -benchmem ./internal/api/
func BenchmarkCreateTaskBatch(b *testing.B) {
	for _, payload := range []string{"", `{"to":"a@b.c","n":[1,2,3]}`} {
		name := "no payload"
		if payload != "" {
			name = "payload"
		}
		b.Run(name, func(b *testing.B) {
			tasks := make([]map[string]any, 1000)
			for i := range tasks {
				tasks[i] = map[string]any{"kind": "noop"}
				if payload != "" {
					tasks[i]["payload"] = json.RawMessage(payload)
				}
			}
			body, err := json.Marshal(map[string]any{"tasks": tasks})
			if err != nil {
				b.Fatal(err)
			}
			var srv *Server
			reset := func() {
				if srv != nil {
					srv.Close()
				}
				if srv, err = New(Config{Store: memory.New(), Logger: slog.New(slog.DiscardHandler)}); err != nil {
					b.Fatal(err)
				}
			}
			reset()
			defer func() { srv.Close() }()
			n := 0
			for b.Loop() {
				if n++; n%100 == 0 {
					b.StopTimer()
					reset()
					b.StartTimer()
				}
				req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/api/tasks/batch", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, req)
				if w.Code != http.StatusCreated {
					b.Fatal(fmt.Sprint(w.Code), w.Body.String())
				}
				_, _ = io.Copy(io.Discard, w.Body)
			}
			b.ReportMetric(float64(b.N*len(tasks))/b.Elapsed().Seconds(), "tasks/s")
		})
	}
}

// BenchmarkWriteTasks encodes the answer to a batch of 1,000 new tasks, with encoding/json
// (writeJSON) and with writeTasksJSON.
func BenchmarkWriteTasks(b *testing.B) {
	at := time.Now().UTC()
	out := tasksJSON{Tasks: make([]taskJSON, 1000)}
	for i := range out.Tasks {
		out.Tasks[i] = taskOut(&store.Task{ID: store.NewID(), Queue: "default", Kind: "noop", Payload: json.RawMessage(`{}`),
			Status: store.StatusPending, MaxAttempts: 25, ScheduledFor: at, CreatedAt: at, UpdatedAt: at})
	}
	for _, enc := range []struct {
		name  string
		write func(http.ResponseWriter, int, tasksJSON)
	}{{"encoding-json", func(w http.ResponseWriter, status int, out tasksJSON) { writeJSON(w, status, out) }}, {"taskEncoder", writeTasksJSON}} {
		b.Run(enc.name, func(b *testing.B) {
			for b.Loop() {
				enc.write(discardWriter{}, http.StatusCreated, out)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
