package store

import (
	"testing"
	"time"
)

func TestClaimReportHoldPrefersQueueSettingsAndSoonestRate(t *testing.T) {
	var r ClaimReport
	r.Hold(HeldByGroupRate, 3*time.Second)
	r.Hold(HeldByGroupRate, time.Second)
	r.Hold(HeldByGroupRate, 2*time.Second)
	if r.HeldBack != HeldByGroupRate || r.RetryIn != time.Second {
		t.Fatalf("group rates: got %+v, want group_rate in 1s", r)
	}
	r.Hold(HeldByConcurrency, time.Minute)
	if r.HeldBack != HeldByConcurrency || r.RetryIn != 0 {
		t.Fatalf("concurrency over group_rate: got %+v", r)
	}
	r.Hold(HeldByGroupConcurrency, 0)
	if r.HeldBack != HeldByConcurrency {
		t.Fatalf("group_concurrency must not replace concurrency: got %+v", r)
	}
	r.Reset()
	if r != (ClaimReport{}) {
		t.Fatalf("reset: got %+v", r)
	}
	var nilReport *ClaimReport
	nilReport.Hold(HeldByPause, 0) // no panic
	nilReport.Reset()
}
