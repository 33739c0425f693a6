package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/postgres"
	"github.com/rotaqueue/rota/internal/testutil/pgtest"
)

// BenchmarkClaimTasksPayload times ClaimTasks of 500 tasks whose payload is a JSON
// object of about the given size: the claim's statement and the client's decoding of
// its rows, of which the payload is the bulk. Outside the timer, each batch's tasks are
// created before it is claimed. Run on the stock cluster:
//
//	go test -run '^$' -bench ClaimTasksPayload -benchtime 100x ./internal/store/postgres/
func BenchmarkClaimTasksPayload(b *testing.B) {
	const batch = 500
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	for _, size := range []int{16, 4096} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			payload := payloadOfSize(size)
			params := make([]store.CreateParams, batch)
			n := 0
			for b.Loop() {
				b.StopTimer()
				if n++; n%20 == 1 {
					execTB(b, pool, `TRUNCATE rota.tasks, rota.task_attempts CASCADE`)
				}
				for i := range params {
					params[i] = store.CreateParams{Kind: "noop", Payload: payload}
				}
				mustCreate(b, st, params...)
				b.StartTimer()
				got, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: "default", From: store.StatusPending,
					WorkerID: "bench", Limit: batch, LeaseDuration: time.Minute})
				if err != nil || len(got) != batch {
					b.Fatalf("claimed %d of %d: %v", len(got), batch, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*batch), "us/task")
		})
	}
}

// payloadOfSize is a JSON object of about size bytes: string fields, numbers and a
// nested array, as task payloads tend to be.
func payloadOfSize(size int) json.RawMessage {
	var sb strings.Builder
	sb.WriteString(`{"id": 12345, "tags": ["a", "b", 3.5, null]`)
	for i := 0; sb.Len() < size-40; i++ {
		fmt.Fprintf(&sb, `, "field_%d": "value %d of the payload"`, i, i)
	}
	sb.WriteString(`}`)
	return json.RawMessage(sb.String())
}
