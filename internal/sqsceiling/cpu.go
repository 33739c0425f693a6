package sqsceiling

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The drain and the ceiling are compared by CPU as well as by rate: on a small machine
// both are CPU-bound, so the CPU one task costs across the processes involved (this
// one, PostgreSQL's backends, the SQS endpoint when it is local) against the CPU one
// message costs the ceiling says where the rest of the gap is.

// SelfCPU is the CPU time (user + system) this process has used so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every Linux Go runs on.
const clockTick = 10 * time.Millisecond

// PidCPU is the CPU time (user + system) process pid has used so far, from
// /proc/<pid>/stat; ok is false when it cannot be read (no such local process, no /proc).
func PidCPU(pid int) (cpu time.Duration, ok bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command (field 2) is in parentheses and may hold spaces: count from its end.
	s := string(raw)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, false
	}
	fields := strings.Fields(s[end+1:])
	// fields[0] is field 3 (state): utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}

// PidsCPU is the CPU time of processes, by pid, for those that can be read.
func PidsCPU(pids []int) map[int]time.Duration {
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		if cpu, ok := PidCPU(pid); ok {
			out[pid] = cpu
		}
	}
	return out
}

// CPUSince is the CPU the processes of now used since before: a process missing from
// before (it started meanwhile) counts in full; one missing from now (it ended) counts
// nothing, its last stretch lost.
func CPUSince(before, now map[int]time.Duration) time.Duration {
	var total time.Duration
	for pid, cpu := range now {
		total += cpu - before[pid]
	}
	return total
}
