// Package poll waits in tests for a condition that another goroutine or process brings
// about.
package poll

import (
	"testing"
	"time"
)

// Until calls cond every interval until it holds, and fails t if timeout passes first.
func Until(t testing.TB, what string, timeout, interval time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(interval)
	}
}
