package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	rotaruntime "github.com/rotaqueue/rota/internal/runtime"
)

func noEnv(string) string { return "" }

func withPG(k string) string {
	if k == "ROTA_TEST_DATABASE_URL" {
		return "postgres://x@127.0.0.1/postgres"
	}
	return ""
}

// TestParseOptionsDefaults: the defaults are the figures (a 200k drain, 5,000/s
// steady), River at its best and tuned, Rota at `rota worker`'s defaults and at its best.
func TestParseOptionsDefaults(t *testing.T) {
	o, err := parseOptions(nil, withPG)
	if err != nil {
		t.Fatal(err)
	}
	if o.PG == "" || o.Drain != 200_000 || o.Rate != 5_000 || o.PressureDrain != 1_000_000 || o.InsertBatch != 1_000 {
		t.Errorf("defaults: %+v", o)
	}
	if !slices.Equal(o.River, []string{"best", "tuned"}) || !slices.Equal(o.Rota, []string{"default", "best"}) ||
		!slices.Equal(o.Workloads, []string{"drain", "steady"}) || !slices.Equal(o.PressureOn, []string{"rota"}) {
		t.Errorf("default lists: river %v rota %v workloads %v pressure-on %v", o.River, o.Rota, o.Workloads, o.PressureOn)
	}
	// river-tuned's MaxWorkers defaults to Rota's default concurrency, from its constant.
	if o.Workers != rotaruntime.DefaultConcurrency {
		t.Errorf("--workers default %d, want runtime.DefaultConcurrency %d", o.Workers, rotaruntime.DefaultConcurrency)
	}
	// rota = `rota worker` with no flags: no tuning field set, its default pool.
	v := o.rotaVariantFor("default")
	if v.name != "rota" || v.conns != rotaWorkerPoolConns || v.cfg.Concurrency != 0 || v.cfg.FetchBatch != 0 || v.cfg.CommitBatch != 0 {
		t.Errorf("rota variant: %+v", v)
	}
	if _, err := parseOptions(nil, noEnv); err == nil || !strings.Contains(err.Error(), "--pg") {
		t.Errorf("no URL: err %v, want --pg required", err)
	}
}

// TestParseOptionsFlags: every new flag reaches its setting.
func TestParseOptionsFlags(t *testing.T) {
	o, err := parseOptions([]string{
		"--drain", "1000000", "--rate", "2500", "--producers", "4", "--steady-history", "0",
		"--river", "default,tuned,best", "--rota", "best", "--workloads", "pressure,insert",
		"--pressure-drain", "300000", "--pressure-on", "rota-best,river-best",
		"--insert-total", "5000", "--insert-batch", "500", "--insert-single-duration", "2s",
		"--rota-best-concurrency", "500", "--rota-best-fetch-batch", "200", "--rota-best-fetch-loops", "2",
		"--rota-best-poll-interval", "50ms", "--rota-best-commit-batch", "300", "--rota-best-commit-interval", "1ms",
		"--rota-best-conns", "12",
	}, withPG)
	if err != nil {
		t.Fatal(err)
	}
	if o.Drain != 1_000_000 || o.Rate != 2500 || o.Producers != 4 || o.SteadyHistory != 0 || o.PressureDrain != 300_000 ||
		o.InsertTotal != 5000 || o.InsertBatch != 500 || o.InsertSingleDuration != 2*time.Second {
		t.Errorf("numbers: %+v", o)
	}
	if !slices.Equal(o.River, []string{"default", "tuned", "best"}) || !slices.Equal(o.PressureOn, []string{"rota-best", "river-best"}) {
		t.Errorf("lists: %v %v", o.River, o.PressureOn)
	}
	v := o.rotaVariantFor("best")
	c := v.cfg
	if v.name != "rota-best" || v.conns != 12 || c.Concurrency != 500 || c.FetchBatch != 200 || c.FetchLoops != 2 ||
		c.PollInterval != 50*time.Millisecond || c.CommitBatch != 300 || c.CommitInterval != time.Millisecond {
		t.Errorf("rota-best: %+v", v)
	}
	// Without --rota-best-conns, rota-best's pool is --max-conns, as River's.
	o, err = parseOptions([]string{"--max-conns", "20"}, withPG)
	if err != nil {
		t.Fatal(err)
	}
	if v := o.rotaVariantFor("best"); v.conns != 20 || v.cfg.Concurrency != 2_000 {
		t.Errorf("rota-best defaults: %+v", v)
	}
}

func TestParseOptionsRejects(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--river", "fast"}, "--river"},
		{[]string{"--river", "best,best"}, "--river"},
		{[]string{"--rota", "tuned"}, "--rota"},
		{[]string{"--workloads", "drain,burst"}, "--workloads"},
		{[]string{"--workloads", "pressure", "--pressure-on", "river-default"}, "--pressure-on"}, // not in this run
		{[]string{"--insert-batch", "1001"}, "--insert-batch"},
		{[]string{"--rota-best-concurrency", "-1"}, "--rota-best"},
		{[]string{"--steady-history", "-1"}, "--steady-history"},
		{[]string{"--insert-single-duration", "-1s"}, "--insert-single-duration"},
		{[]string{"--plan-cache-mode", "sometimes"}, "--plan-cache-mode"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		if _, err := parseOptions(tc.args, withPG); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}

// TestRiverBest: river-best is River's published benchmark configuration
// (cmd/river/riverbench/river_bench.go): MaxWorkers 2,000, FetchCooldown 2ms,
// FetchPollInterval 20ms.
func TestRiverBest(t *testing.T) {
	v := riverVariants["best"]
	if v.name != "river-best" || v.maxWorkers != 2_000 || v.fetchCooldown != 2*time.Millisecond || v.fetchPollInterval != 20*time.Millisecond {
		t.Errorf("river-best: %+v", v)
	}
	if tuned := riverVariants["tuned"]; tuned.maxWorkers != 0 || tuned.fetchCooldown != v.fetchCooldown || tuned.fetchPollInterval != v.fetchPollInterval {
		t.Errorf("river-tuned: %+v, want river-best's fetch settings at --workers", tuned)
	}
}

type fakeSystem struct {
	system
	name string
	rota bool
}

func (f fakeSystem) Name() string { return f.name }
func (f fakeSystem) IsRota() bool { return f.rota }

func TestInterleave(t *testing.T) {
	rivers := []system{fakeSystem{name: "river-best"}, fakeSystem{name: "river-tuned"}, fakeSystem{name: "river-default"}}
	rotas := []system{fakeSystem{name: "rota", rota: true}, fakeSystem{name: "rota-best", rota: true}}
	var got []string
	for _, s := range interleave(rivers, rotas) {
		got = append(got, s.Name())
	}
	if want := []string{"river-best", "rota", "river-tuned", "rota-best", "river-default"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestRatios: both Rota variants are compared with every River variant; pressure modes
// with their plain drain; Rota's insert cases with River's InsertMany and InsertManyFast.
func TestRatios(t *testing.T) {
	rivers := []system{fakeSystem{name: "river-best"}, fakeSystem{name: "river-tuned"}}
	rotas := []system{fakeSystem{name: "rota", rota: true}, fakeSystem{name: "rota-best", rota: true}}
	var runs []Result
	for pair := 1; pair <= 2; pair++ {
		for sys, tps := range map[string]float64{"river-best": 30_000, "river-tuned": 20_000, "rota": 45_000, "rota-best": 60_000} {
			runs = append(runs, Result{Pair: pair, System: sys, Workload: workloadDrain, TasksPerSec: tps},
				Result{Pair: pair, System: sys, Workload: workloadSteady, P50ms: tps / 10_000, P99ms: tps / 1_000, E2EP50ms: 2, E2EP99ms: 4})
		}
		runs = append(runs,
			Result{Pair: pair, System: "rota", Workload: workloadPressure, Mode: modePlain, TasksPerSec: 40_000},
			Result{Pair: pair, System: "rota", Workload: workloadPressure, Mode: modeHeldXact, TasksPerSec: 30_000},
			Result{Pair: pair, System: "rota", Workload: workloadPressure, Mode: modeAutovacuumOff, TasksPerSec: 36_000},
			Result{Pair: pair, System: "river", Workload: workloadInsert, Case: caseRiverInsertMany, TasksPerSec: 50_000},
			Result{Pair: pair, System: "river", Workload: workloadInsert, Case: caseRiverInsertManyFast, TasksPerSec: 100_000},
			Result{Pair: pair, System: "rota", Workload: workloadInsert, Case: caseRotaEnqueueMany, TasksPerSec: 100_000},
			Result{Pair: pair, System: "rota", Workload: workloadInsert, Case: caseRotaEnqueueTx, TasksPerSec: 100_000},
			Result{Pair: pair, System: "rota", Workload: workloadInsert, Case: caseRotaHTTPBatch, TasksPerSec: 25_000},
			Result{Pair: pair, System: "river", Workload: workloadInsert, Case: caseRiverInsertSingle, TasksPerSec: 2_000},
			Result{Pair: pair, System: "rota", Workload: workloadInsert, Case: caseRotaEnqueueSingle, TasksPerSec: 400},
		)
	}
	got := map[string]float64{}
	for _, r := range ratios(runs, rivers, rotas) {
		if len(r.Values) != 2 {
			t.Errorf("%+v: want a value per pair", r)
		}
		got[r.Metric+": "+r.Of+" / "+r.Over] = r.Median
	}
	for key, want := range map[string]float64{
		"drain tasks/s: rota / river-best":                      1.5,
		"drain tasks/s: rota-best / river-best":                 2,
		"drain tasks/s: rota / river-tuned":                     2.25,
		"drain tasks/s: rota-best / river-tuned":                3,
		"steady p99 pickup: rota / river-best":                  1.5,
		"steady p50 e2e: rota-best / river-tuned":               1,
		"pressure tasks/s: rota held-xact / rota plain":         0.75,
		"pressure tasks/s: rota autovacuum-off / rota plain":    0.9,
		"insert tasks/s: rota EnqueueMany / river InsertMany":   2,
		"insert tasks/s: rota EnqueueTx / river InsertManyFast": 1,
		"insert tasks/s: rota HTTP batch / river InsertMany":    0.5,
	} {
		if g, ok := got[key]; !ok || g < want-1e-9 || g > want+1e-9 {
			t.Errorf("%s = %v (present %t), want %v", key, g, ok, want)
		}
	}
	// 5 drain/steady metrics x 2 Rota x 2 River, 2 pressure modes, 3 Rota cases x 2 River
	// cases, single inserts.
	if len(got) != 20+2+6+1 {
		t.Errorf("%d ratio rows, want 29: %v", len(got), got)
	}
}

func TestBlockStats(t *testing.T) {
	snap := func(started, claimBlocks, claimed, idx int64) *blockSnap {
		return &blockSnap{started: started, claimBlocks: claimBlocks, claimed: claimed, index: map[string]int64{"rota.tasks_claim_pending": idx}}
	}
	b := &blockSampler{s: &rotaSystem{}}
	b.snaps = [4]*blockSnap{snap(10, 100, 10, 1000), snap(110, 1100, 110, 1500), snap(890, 9000, 890, 5000), snap(990, 11000, 990, 6000)}
	st := b.stats()
	if st.ClaimFirst != 10 || st.ClaimLast != 20 || st.IndexFirst != 5 || st.IndexLast != 10 || st.Indexes["rota.tasks_claim_pending"] != [2]float64{5, 10} ||
		st.ClaimIndex != "rota.tasks_claim_pending" || st.ClaimIndexFirst != 5 || st.ClaimIndexLast != 10 {
		t.Errorf("stats %+v", st)
	}
	// A drain too short for the last window reads 0 there.
	b.snaps[3] = nil
	if st := b.stats(); st.IndexLast != 0 || st.ClaimLast != 0 || st.IndexFirst != 5 {
		t.Errorf("stats without the last snapshot %+v", st)
	}
}

// TestSmoke runs one tiny pair of every workload on every River and Rota variant, end
// to end: database creation, both migrations, drain, steady, pressure (every mode),
// insert (every case, the HTTP API in process), the tables. It needs
// ROTA_TEST_DATABASE_URL (a role that may CREATE DATABASE); without it the test skips,
// unless CI or ROTA_REQUIRE_INTEGRATION is set (the root module's convention), where it
// fails.
func TestSmoke(t *testing.T) {
	url := os.Getenv("ROTA_TEST_DATABASE_URL")
	if url == "" {
		if os.Getenv("CI") != "" || os.Getenv("ROTA_REQUIRE_INTEGRATION") != "" {
			t.Fatal("ROTA_TEST_DATABASE_URL is not set (required under CI / ROTA_REQUIRE_INTEGRATION)")
		}
		t.Skip("ROTA_TEST_DATABASE_URL is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	o, err := parseOptions([]string{
		"--pairs", "1", "--drain", "200", "--rate", "100", "--duration", "1s", "--producers", "2", "--steady-history", "100",
		"--max-conns", "8", "--river", "default,tuned,best", "--rota", "default,best", "--rota-best-concurrency", "200",
		"--workloads", "drain,steady,pressure,insert", "--pressure-drain", "500", "--pressure-on", "rota",
		"--insert-total", "300", "--insert-batch", "100", "--insert-single-duration", "500ms",
	}, func(string) string { return url })
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := run(ctx, o, &progress)
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range rep.Runs {
		count[r.Workload]++
		switch r.Workload {
		case workloadDrain:
			// CPU is counted in 10 ms ticks: a 200-job drain may read 0 on either side.
			if r.Jobs != 200 || r.TasksPerSec <= 0 || r.ClientCPUus < 0 || r.ServerCPUus < 0 {
				t.Errorf("%s drain: %+v", r.System, r)
			}
		case workloadSteady:
			if r.Jobs != 100 || r.RateAchieved <= 0 || r.P99ms < r.P50ms || r.E2EP99ms < r.E2EP50ms || r.E2EP50ms <= 0 {
				t.Errorf("%s steady: %+v", r.System, r)
			}
		case workloadPressure:
			if r.System != "rota" || r.Jobs != 500 || r.TasksPerSec <= 0 || r.Blocks == nil || !slices.Contains(pressureModes, r.Mode) {
				t.Errorf("pressure: %+v", r)
			}
		case workloadInsert:
			single := r.Case == caseRiverInsertSingle || r.Case == caseRotaEnqueueSingle
			if (r.Jobs != 300 && !single) || r.Jobs <= 0 || r.TasksPerSec <= 0 || r.Case == "" {
				t.Errorf("insert: %+v", r)
			}
		}
	}
	// 5 systems x drain and steady, 3 pressure modes on rota, 8 insert cases.
	if count[workloadDrain] != 5 || count[workloadSteady] != 5 || count[workloadPressure] != 3 || count[workloadInsert] != 8 {
		t.Errorf("runs per workload %v", count)
	}
	// 5 metrics x 2 Rota x 3 River, 2 pressure modes, 3 x 2 insert cases, single inserts.
	if got, want := len(rep.Ratios), 30+2+6+1; got != want {
		t.Errorf("got %d ratio rows, want %d", got, want)
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
	for _, want := range []string{"drain tasks/s", "steady p99 e2e", "river-default", "river-tuned", "river-best", "rota-best",
		"pressure tasks/s", "rota held-xact", "rota autovacuum-off", "rota HTTP batch", "river InsertManyFast", "rota Enqueue, one per call"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, table.String())
		}
	}
}

// TestRotaClaimQuery: the pressure workload's claim pattern matches Rota's claim
// statements, in their text and in pg_stat_statements' normalized form (constants become
// $n), and no other statement of the store (RecordOutcomes tests status = 'PROCESSING'
// too, which an earlier pattern caught).
func TestRotaClaimQuery(t *testing.T) {
	re := regexp.MustCompile(rotaClaimQuery) // the same syntax in Go and PostgreSQL here
	files, err := filepath.Glob("../internal/store/postgres/queries/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no queries found: %v", err)
	}
	var matched []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "{{status}}", "'PENDING'")
		normalized := regexp.MustCompile(`'[A-Z]+'`).ReplaceAllString(text, "$$18")
		if re.MatchString(text) != re.MatchString(normalized) {
			t.Errorf("%s: matches its text %t, its normalized text %t", f, re.MatchString(text), re.MatchString(normalized))
		}
		if re.MatchString(text) {
			matched = append(matched, filepath.Base(f))
		}
	}
	if want := []string{"claim_tasks.sql", "claim_tasks_by_id.sql", "claim_tasks_by_ids.sql"}; !slices.Equal(matched, want) {
		t.Errorf("the claim pattern matches %v, want %v", matched, want)
	}
	if !re.MatchString(`SELECT * FROM rota.claim_limited_pending($1, $2, $3, $4, $5)`) {
		t.Error("the claim pattern misses a claim called as a SQL function")
	}
}
