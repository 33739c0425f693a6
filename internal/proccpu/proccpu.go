// Package proccpu reads the CPU time processes have used: this one, and others on this
// machine through /proc. Benchmarks use it to report CPU per task, which other work on a
// shared machine moves far less than wall time.
package proccpu

import (
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// Self is the CPU time (user + system) this process has used so far.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Pid is the CPU time (user + system) process pid has used so far, from
// /proc/<pid>/stat; ok is false when it cannot be read (no such local process, no /proc).
func Pid(pid int) (cpu time.Duration, ok bool) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, false
	}
	st, err := p.Stat()
	if err != nil {
		return 0, false
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), true
}

// Pids is the CPU time of processes, by pid, for those that can be read.
func Pids(pids []int) map[int]time.Duration {
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		if cpu, ok := Pid(pid); ok {
			out[pid] = cpu
		}
	}
	return out
}

// Since is the CPU the processes of now used since before: a process missing from
// before (it started meanwhile) counts in full; one missing from now (it ended) counts
// nothing, its last stretch lost.
func Since(before, now map[int]time.Duration) time.Duration {
	var total time.Duration
	for pid, cpu := range now {
		total += cpu - before[pid]
	}
	return total
}
