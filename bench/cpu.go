package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// cpuMeter reads how much CPU this process and the PostgreSQL server have used, so a
// drain can report CPU per task on each side: on 2 shared cores that split says where a
// system's time goes. The server side works only when the server runs on this machine
// (its processes are readable in /proc); otherwise it reads zero and is not reported.
type cpuMeter struct {
	postmaster int // 0 = server not on this machine
	tick       float64
}

// newCPUMeter finds the server's postmaster: the parent of the admin connection's
// backend, when that backend is a local process.
func newCPUMeter(ctx context.Context, admin *pgx.Conn) cpuMeter {
	m := cpuMeter{tick: 100} // USER_HZ; 100 on every Linux this runs on
	var backend int
	if err := admin.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return m
	}
	f, ok := procStat(backend)
	if !ok || !strings.HasPrefix(f.comm, "postgres") && !strings.HasPrefix(f.comm, "postmaster") {
		return m
	}
	m.postmaster = f.ppid
	return m
}

// cpuSample is the CPU used so far by the client (this process) and the server.
type cpuSample struct {
	client, server time.Duration
}

func (m cpuMeter) sample() cpuSample {
	var s cpuSample
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if m.postmaster == 0 {
		return s
	}
	// The postmaster's own time, its exited children's (reaped: cutime/cstime), and its
	// live children's: backends, autovacuum, the WAL writer, the checkpointer.
	var ticks uint64
	if f, ok := procStat(m.postmaster); ok {
		ticks += f.utime + f.stime + f.cutime + f.cstime
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if f, ok := procStat(pid); ok && f.ppid == m.postmaster {
			ticks += f.utime + f.stime
		}
	}
	s.server = time.Duration(float64(ticks) / m.tick * float64(time.Second))
	return s
}

type statFields struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime uint64
}

// procStat parses /proc/<pid>/stat (proc(5)): comm is in parentheses and may hold
// spaces, so the fields are counted from the last ')'.
func procStat(pid int) (statFields, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return statFields{}, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return statFields{}, false
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
	if len(f) < 15 {
		return statFields{}, false
	}
	num := func(i int) uint64 { n, _ := strconv.ParseUint(f[i], 10, 64); return n }
	return statFields{
		comm: s[open+1 : end], ppid: int(num(1)),
		utime: num(11), stime: num(12), cutime: num(13), cstime: num(14),
	}, true
}
