package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/metrics"
	"github.com/rotaqueue/rota/internal/store"
)

// A worker's endpoint serves its registry (with the Go collectors) and a health check.
func TestEndpoint(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	metrics.New(reg).TaskClaimed(&store.Task{Queue: "default", Kind: "noop"})
	srv := httptest.NewServer(metrics.NewEndpoint(reg))
	t.Cleanup(srv.Close)
	base := srv.URL

	status, body := get(t, base+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d", status)
	}
	for _, want := range []string{
		`rota_tasks_claimed_total{kind="noop",queue="default"} 1`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
		"promhttp_metric_handler_requests_total",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if status, body := get(t, base+"/healthz"); status != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", status, body)
	}
	if status, _ := get(t, base+"/api/tasks"); status != http.StatusNotFound {
		t.Errorf("/api/tasks: %d, want 404 (a worker serves no API)", status)
	}
	// Addressed to a DNS name (a DNS-rebinding page): /metrics is refused, the probe is not.
	for path, want := range map[string]int{"/metrics": http.StatusForbidden, "/healthz": http.StatusOK} {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Host = "rebind.example:9090"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s with Host rebind.example: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
