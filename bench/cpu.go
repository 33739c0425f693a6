package main

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/procfs"

	"github.com/rotaqueue/rota/internal/proccpu"
)

// cpuMeter reads how much CPU this process and the PostgreSQL server have used, so a
// drain can report CPU per task on each side: on 2 shared cores that split says where a
// system's time goes. The server side works only when the server runs on this machine
// (its processes are readable in /proc); otherwise it reads zero and is not reported.
type cpuMeter struct {
	postmaster int // 0 = server not on this machine
}

// newCPUMeter finds the server's postmaster: the parent of the admin connection's
// backend, when that backend is a local process.
func newCPUMeter(ctx context.Context, admin *pgx.Conn) cpuMeter {
	var m cpuMeter
	var backend int
	if err := admin.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return m
	}
	st, ok := procStat(backend)
	if !ok || !strings.HasPrefix(st.Comm, "postgres") && !strings.HasPrefix(st.Comm, "postmaster") {
		return m
	}
	m.postmaster = st.PPID
	return m
}

// cpuSample is the CPU used so far by the client (this process) and the server.
type cpuSample struct {
	client, server time.Duration
}

func (m cpuMeter) sample() cpuSample {
	s := cpuSample{client: proccpu.Self()}
	if m.postmaster == 0 {
		return s
	}
	// The postmaster's own time, its exited children's (reaped: cutime/cstime), and its
	// live children's: backends, autovacuum, the WAL writer, the checkpointer.
	var seconds float64
	if st, ok := procStat(m.postmaster); ok {
		seconds += st.CPUTime() + float64(st.CUTime+st.CSTime)/clockTicks
	}
	procs, _ := procfs.AllProcs()
	for _, p := range procs {
		if st, err := p.Stat(); err == nil && st.PPID == m.postmaster {
			seconds += st.CPUTime()
		}
	}
	s.server = time.Duration(seconds * float64(time.Second))
	return s
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (procfs converts utime and
// stime itself, not the children's cutime and cstime): 100 on every Linux this runs on.
const clockTicks = 100

// procStat reads /proc/<pid>/stat; ok is false when pid is not a local process.
func procStat(pid int) (procfs.ProcStat, bool) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStat{}, false
	}
	st, err := p.Stat()
	return st, err == nil
}
