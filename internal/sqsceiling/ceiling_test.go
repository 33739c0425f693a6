package sqsceiling_test

import (
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/sqsceiling"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

func TestMeasureDrainsTheQueue(t *testing.T) {
	srv := sqstest.Start(t)
	url := srv.CreateQueue(t, "ceiling")

	// 205: the last send is a partial batch.
	res, err := sqsceiling.Measure(t.Context(), srv.Client(t), url, 205, 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages != 205 || res.Clients != 3 || res.Elapsed <= 0 {
		t.Fatalf("result %+v, want 205 messages, 3 clients and a positive duration", res)
	}
	if want := 205 / res.Elapsed.Seconds(); res.PerSecond() != want {
		t.Errorf("PerSecond() = %v, want %v", res.PerSecond(), want)
	}
	if got := srv.CountMessages(t, url); got.Total() != 0 {
		t.Fatalf("after the measurement: %+v, want an empty queue", got)
	}
}

func TestMeasureRejectsBadCounts(t *testing.T) {
	// No server needed: the arguments are checked before anything is sent.
	client := sqstest.NewClient("http://127.0.0.1:1")
	for _, tc := range []struct{ messages, clients int }{{0, 4}, {100, 0}, {-1, 1}} {
		if _, err := sqsceiling.Measure(t.Context(), client, "http://127.0.0.1:1/q", tc.messages, tc.clients); err == nil {
			t.Errorf("Measure(messages=%d, clients=%d) succeeded, want an error", tc.messages, tc.clients)
		}
	}
}

func TestPerSecondOfNoTime(t *testing.T) {
	if got := (sqsceiling.Result{Messages: 10}).PerSecond(); got != 0 {
		t.Errorf("PerSecond() without a duration = %v, want 0", got)
	}
	if got := (sqsceiling.Result{Messages: 10, Elapsed: 2 * time.Second}).PerSecond(); got != 5 {
		t.Errorf("PerSecond() = %v, want 5", got)
	}
}
