package sqsmode_test

import (
	"context"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/procfs"

	"github.com/rotaqueue/rota/internal/proccpu"
)

// cpuMeter measures the CPU of a benchmark's stretch in each process that does its
// work: this one (the Rota code and the SQS clients), the PostgreSQL backends of the
// test's database, and the fauxqs servers this process started (node children).
type cpuMeter struct {
	pool *pgxpool.Pool // nil: no PostgreSQL in the stretch
	self time.Duration
	pg   map[int]time.Duration
	sqs  map[int]time.Duration
}

// cpuUse is what one stretch cost, per process.
type cpuUse struct{ self, pg, sqs time.Duration }

func (u cpuUse) total() time.Duration { return u.self + u.pg + u.sqs }

func startCPUMeter(b *testing.B, pool *pgxpool.Pool) *cpuMeter {
	m := &cpuMeter{pool: pool}
	m.pg, m.sqs = proccpu.Pids(backendPids(b, pool)), proccpu.Pids(fauxqsPids())
	m.self = proccpu.Self()
	return m
}

func (m *cpuMeter) stop(b *testing.B) cpuUse {
	self := proccpu.Self() - m.self
	return cpuUse{
		self: self,
		pg:   proccpu.Since(m.pg, proccpu.Pids(backendPids(b, m.pool))),
		sqs:  proccpu.Since(m.sqs, proccpu.Pids(fauxqsPids())),
	}
}

// report adds the stretch's CPU per unit (task or message) to b's metrics, in µs.
func (u cpuUse) report(b *testing.B, prefix string, n int) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(per(u.self), prefix+"_go_us")
	if u.pg > 0 {
		b.ReportMetric(per(u.pg), prefix+"_pg_us")
	}
	b.ReportMetric(per(u.sqs), prefix+"_sqs_us")
	b.ReportMetric(per(u.total()), prefix+"_cpu_us")
}

// backendPids are the PostgreSQL backends connected to pool's database (local ones are
// read from /proc; a remote server's are skipped).
func backendPids(b *testing.B, pool *pgxpool.Pool) []int {
	if pool == nil {
		return nil
	}
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// fauxqsPids are this process's children running fauxqs's launcher.
func fauxqsPids() []int {
	procs, _ := procfs.AllProcs()
	var pids []int
	for _, p := range procs {
		cmdline, err := p.CmdLine()
		if err != nil || !strings.Contains(strings.Join(cmdline, " "), "launch.mjs") {
			continue
		}
		if st, err := p.Stat(); err == nil && st.PPID == os.Getpid() {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// profileDrain starts a CPU profile of this process when ROTA_BENCH_CPUPROFILE names a
// file, for the drain alone (the ceiling and the set-up are left out); call the function
// it returns to stop it.
func profileDrain(b *testing.B) func() {
	path := os.Getenv("ROTA_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
