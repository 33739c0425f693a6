package sqstest_test

import (
	"testing"

	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

func TestMeasureCeilingDrainsTheQueue(t *testing.T) {
	t.Parallel()
	srv := sqstest.Start(t)
	url := srv.CreateQueue(t, "ceiling")

	// 205: the last send is a partial batch.
	perSecond, err := sqstest.MeasureCeiling(callCtx(t), srv.Client(t), url, 205, 3)
	if err != nil {
		t.Fatal(err)
	}
	if perSecond <= 0 {
		t.Fatalf("perSecond = %v, want a positive rate", perSecond)
	}
	if got := srv.CountMessages(t, url); got.Total() != 0 {
		t.Fatalf("after the measurement: %+v, want an empty queue", got)
	}
}

func TestMeasureCeilingRejectsBadCounts(t *testing.T) {
	// No server needed: the arguments are checked before anything is sent.
	client := sqstest.NewClient("http://127.0.0.1:1")
	for _, tc := range []struct{ messages, clients int }{{0, 4}, {100, 0}, {-1, 1}} {
		if _, err := sqstest.MeasureCeiling(t.Context(), client, "http://127.0.0.1:1/q", tc.messages, tc.clients); err == nil {
			t.Errorf("MeasureCeiling(messages=%d, clients=%d) succeeded, want an error", tc.messages, tc.clients)
		}
	}
}

// BenchmarkCeiling is the raw fauxqs ceiling: b.N messages sent, received and deleted in
// batches of 10 by 4 senders and 4 receivers, reported as msgs/s (ns/op is per message).
//
//	go test -run '^$' -bench Ceiling -benchtime 20000x ./internal/testutil/sqstest/
func BenchmarkCeiling(b *testing.B) {
	srv := sqstest.Start(b)
	url := srv.CreateQueue(b, "ceiling")
	client := srv.Client(b)
	b.ResetTimer()
	perSecond, err := sqstest.MeasureCeiling(b.Context(), client, url, b.N, 4)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(perSecond, "msgs/s")
}
