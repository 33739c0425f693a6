package e2e

import (
	"bufio"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is what the test keeps of an exported span.
type otlpSpan struct {
	service, name           string
	traceID, spanID, parent string
	links                   []string // span ids
	attrs                   map[string]string
}

// otlpReceiver is a loopback OTLP/HTTP collector: it decodes the protobuf export
// requests the processes send to /v1/traces and keeps their spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []otlpSpan
}

func (rc *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := otlpSpan{service: service, name: s.Name, traceID: hex.EncodeToString(s.TraceId),
					spanID: hex.EncodeToString(s.SpanId), parent: hex.EncodeToString(s.ParentSpanId), attrs: map[string]string{}}
				for _, l := range s.Links {
					sp.links = append(sp.links, hex.EncodeToString(l.SpanId))
				}
				for _, kv := range s.Attributes {
					sp.attrs[kv.Key] = kv.GetValue().GetStringValue()
				}
				rc.spans = append(rc.spans, sp)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// find returns the first span that match accepts.
func (rc *otlpReceiver) find(match func(otlpSpan) bool) (otlpSpan, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, s := range rc.spans {
		if match(s) {
			return s, true
		}
	}
	return otlpSpan{}, false
}

// TestOneTraceFromPostToHandler: real `rota serve` and `rota worker` processes export
// to a loopback OTLP receiver; a task created by POST /api/tasks with a traceparent
// header is handled in that trace: the API's server span is the traceparent's child,
// the worker's attempt span is the API span's child (same trace id), and it links to
// its claim statement's span, as the commit statement's span links to it. The worker's export interval is a minute, so its
// spans arrive only through the flush at SIGTERM.
func TestOneTraceFromPostToHandler(t *testing.T) {
	dbURL, _ := newDB(t)
	rc := &otlpReceiver{}
	collector := httptest.NewServer(rc)
	t.Cleanup(collector.Close)

	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_EXPORTER=", "OTEL_SDK_DISABLED=", "OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES="}
	serve := startProc(t, "serve", append(otel, "ROTA_API_TOKEN=", "ROTA_ADDR=", "OTEL_BSP_SCHEDULE_DELAY=50"),
		"serve", "--database-url", dbURL, "--addr", "127.0.0.1:0", "--token", apiToken)
	url := listeningURL(t, serve)
	worker := startProc(t, "worker", append(otel, "OTEL_BSP_SCHEDULE_DELAY=60000"),
		"worker", "--database-url", dbURL, "--worker-id", "traced-worker")

	const traceID, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, err := http.NewRequest("POST", url+"/api/tasks", strings.NewReader(`{"kind":"noop"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("POST /api/tasks: %d", res.StatusCode)
	}
	c := apiClient{t: t, url: url, token: apiToken}
	var taskID string
	waitFor(t, 30*time.Second, "the task to succeed", func() (bool, string) {
		list := c.call("GET", "/api/tasks?kind=noop", nil).list("tasks")
		if len(list) != 1 {
			return false, "no task yet"
		}
		task := list[0].(map[string]any)
		taskID, _ = task["id"].(string)
		return task["status"] == "SUCCEEDED", task["status"].(string)
	})

	var apiSpan otlpSpan
	waitFor(t, 30*time.Second, "the API span", func() (bool, string) {
		var ok bool
		apiSpan, ok = rc.find(func(s otlpSpan) bool { return s.name == "POST /api/tasks" })
		return ok, ""
	})
	if apiSpan.traceID != traceID || apiSpan.parent != callerSpan || apiSpan.service != "rota-serve" {
		t.Fatalf("API span: trace %s parent %s service %s, want trace %s parent %s service rota-serve",
			apiSpan.traceID, apiSpan.parent, apiSpan.service, traceID, callerSpan)
	}
	if _, early := rc.find(func(s otlpSpan) bool { return s.service == "rota-worker" }); early {
		t.Log("the worker exported before its SIGTERM (its export interval is a minute)")
	}

	worker.stop(t, 15*time.Second) // the flush at exit exports the worker's spans
	attempt, ok := rc.find(func(s otlpSpan) bool { return s.name == "rota.attempt noop" })
	if !ok {
		t.Fatalf("no attempt span after the worker's exit; worker log:\n%s", worker.output())
	}
	if attempt.traceID != traceID || attempt.parent != apiSpan.spanID || attempt.service != "rota-worker" {
		t.Errorf("attempt span: trace %s parent %s service %s, want trace %s and the API span %s as parent",
			attempt.traceID, attempt.parent, attempt.service, traceID, apiSpan.spanID)
	}
	if attempt.attrs["rota.task.id"] != taskID || attempt.attrs["rota.queue"] != "default" || attempt.attrs["rota.kind"] != "noop" {
		t.Errorf("attempt span attributes %v, want task %s", attempt.attrs, taskID)
	}
	// The claim and commit statements serve many tasks: each is a trace of its own,
	// linked with the attempt (the attempt links to its claim, the commit to the attempt).
	if len(attempt.links) != 1 {
		t.Fatalf("attempt span links %v, want its claim's span", attempt.links)
	}
	if _, ok := rc.find(func(s otlpSpan) bool { return s.name == "rota.claim" && s.spanID == attempt.links[0] }); !ok {
		t.Errorf("the attempt links to %s, which is no exported rota.claim span", attempt.links[0])
	}
	if _, ok := rc.find(func(s otlpSpan) bool {
		return s.name == "rota.commit" && s.service == "rota-worker" && strings.Contains(strings.Join(s.links, ","), attempt.spanID)
	}); !ok {
		t.Errorf("no rota.commit span links to the attempt span %s", attempt.spanID)
	}
}

// listeningURL waits for a server process to print the URL it listens on.
func listeningURL(t *testing.T, p *proc) string {
	t.Helper()
	var url string
	waitFor(t, 30*time.Second, p.name+" to print its URL", func() (bool, string) {
		sc := bufio.NewScanner(strings.NewReader(p.output()))
		for sc.Scan() {
			if _, after, ok := strings.Cut(sc.Text(), " listening on "); ok {
				url = after
				return true, ""
			}
		}
		if p.exited() {
			t.Fatalf("%s exited:\n%s", p.name, p.output())
		}
		return false, p.output()
	})
	t.Cleanup(func() { p.stop(t, 15*time.Second) })
	return url
}
