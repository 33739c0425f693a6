package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSmoke runs one tiny pair (200-job drain, 1s of steady inserts at 100/s) on both
// River variants and Rota, end to end: database creation, both migrations, every
// workload, the ratio table. It needs ROTA_TEST_DATABASE_URL (a role that may CREATE
// DATABASE); without it the test skips, unless CI or ROTA_REQUIRE_INTEGRATION is set
// (the root module's convention), where it fails.
func TestSmoke(t *testing.T) {
	url := os.Getenv("ROTA_TEST_DATABASE_URL")
	if url == "" {
		if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_INTEGRATION") != "" {
			t.Fatal("ROTA_TEST_DATABASE_URL is not set (required under CI / ROTA_REQUIRE_INTEGRATION)")
		}
		t.Skip("ROTA_TEST_DATABASE_URL is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := run(ctx, options{
		PG: url, Pairs: 1, Drain: 200, Rate: 100, Duration: time.Second,
		Workers: 100, MaxConns: 8, River: []string{"default", "tuned"},
		Workloads: []string{"drain", "steady"},
	}, &progress)
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rep.Runs), 6; got != want {
		t.Fatalf("got %d runs, want %d (3 systems x 2 workloads)", got, want)
	}
	for _, r := range rep.Runs {
		switch r.Workload {
		case "drain":
			// CPU is counted in 10 ms ticks: a 200-job drain may read 0 on either side.
			if r.Jobs != 200 || r.TasksPerSec <= 0 || r.ClientCPUus < 0 || r.ServerCPUus < 0 {
				t.Errorf("%s drain: %+v", r.System, r)
			}
		case "steady":
			if r.Jobs != 100 || r.RateAchieved <= 0 || r.P99ms < r.P50ms {
				t.Errorf("%s steady: %+v", r.System, r)
			}
		}
	}
	if got, want := len(rep.Ratios), 6; got != want {
		t.Errorf("got %d ratio rows, want %d (3 metrics x 2 River variants)", got, want)
	}
	// The test's server runs on this machine, so its CPU is found and read.
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	meter := newCPUMeter(ctx, admin)
	if s := meter.sample(); meter.postmaster == 0 || s.server <= 0 || s.client <= 0 {
		t.Errorf("CPU meter: postmaster %d, sample %+v; want the local server found and read", meter.postmaster, s)
	}

	var table bytes.Buffer
	rep.print(&table)
	for _, want := range []string{"drain tasks/s", "steady p50 pickup", "steady p99 pickup", "river-default", "river-tuned", "rota"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, table.String())
		}
	}
}
