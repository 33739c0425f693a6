package sqsceiling

import (
	"os"
	"testing"
	"time"
)

func TestPidCPUReadsALiveProcessAndNotAMissingOne(t *testing.T) {
	spin := time.Now().Add(30 * time.Millisecond)
	for time.Now().Before(spin) { // some CPU of its own to read
	}
	if cpu, ok := PidCPU(os.Getpid()); !ok || cpu < 0 {
		t.Errorf("PidCPU(self) = %v, %v; want a reading", cpu, ok)
	}
	if _, ok := PidCPU(-1); ok {
		t.Error("PidCPU(-1) read something")
	}
	if SelfCPU() <= 0 {
		t.Error("SelfCPU() is not positive after spinning")
	}
}

func TestCPUSinceCountsNewProcessesInFullAndEndedOnesNot(t *testing.T) {
	before := map[int]time.Duration{1: time.Second, 2: time.Second}
	now := map[int]time.Duration{1: 3 * time.Second, 3: time.Second} // 2 ended, 3 started
	if got := CPUSince(before, now); got != 3*time.Second {
		t.Errorf("CPUSince = %v, want 3s", got)
	}
}
