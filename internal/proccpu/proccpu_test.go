package proccpu

import (
	"os"
	"testing"
	"time"
)

func TestPidReadsALiveProcessAndNotAMissingOne(t *testing.T) {
	spin := time.Now().Add(30 * time.Millisecond)
	for time.Now().Before(spin) { // some CPU of its own to read
	}
	if cpu, ok := Pid(os.Getpid()); !ok || cpu < 0 {
		t.Errorf("Pid(self) = %v, %v; want a reading", cpu, ok)
	}
	if _, ok := Pid(-1); ok {
		t.Error("Pid(-1) read something")
	}
	if Self() <= 0 {
		t.Error("Self() is not positive after spinning")
	}
}

func TestSinceCountsNewProcessesInFullAndEndedOnesNot(t *testing.T) {
	before := map[int]time.Duration{1: time.Second, 2: time.Second}
	now := map[int]time.Duration{1: 3 * time.Second, 3: time.Second} // 2 ended, 3 started
	if got := Since(before, now); got != 3*time.Second {
		t.Errorf("Since = %v, want 3s", got)
	}
}
