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

// BenchmarkClaimFanOutElements times ClaimTasks of 500 elements of one fan-out whose
// array (and so every element's inputs) holds 2,000 numbers, about 10 KB: in a plain
// queue, and in one with a concurrency limit (rota.claim_limited). A step's inputs are
// kept once on its step's row; a claim should carry them once per step, not once per
// task (-benchmem shows the difference). Outside the timer, each iteration creates the
// flow and succeeds its first step, which starts the fan-out. Run on the stock cluster:
//
//	go test -run '^$' -bench ClaimFanOutElements -benchtime 20x -benchmem ./internal/store/postgres/
func BenchmarkClaimFanOutElements(b *testing.B) {
	const width, batch = 2000, 500
	ctx := context.Background()
	pool := pgtest.NewPool(b)
	st := postgres.New(pool)
	b.Cleanup(st.Close)
	elements := make([]int, width)
	for i := range elements {
		elements[i] = i
	}
	output, _ := json.Marshal(elements)
	limited := 1_000_000
	if _, err := st.UpdateQueueSettings(ctx, "limited", store.QueuePatch{Concurrency: &store.Change[int]{To: &limited}}); err != nil {
		b.Fatal(err)
	}
	for _, queue := range []string{"default", "limited"} {
		b.Run("queue="+queue, func(b *testing.B) {
			claim := func(limit int) []*store.Task {
				got, err := st.ClaimTasks(ctx, store.ClaimParams{Queue: queue, From: store.StatusPending,
					WorkerID: "bench", Limit: limit, LeaseDuration: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				return got
			}
			for b.Loop() {
				b.StopTimer()
				execTB(b, pool, `TRUNCATE rota.tasks, rota.task_attempts, rota.flows CASCADE`)
				if _, err := st.CreateFlow(ctx, store.FlowParams{Queue: queue, Steps: []store.StepParams{
					{Name: "a", Kind: "emit"},
					{Name: "b", Kind: "item", DependsOn: []string{"a"}, ForEach: "a"},
				}}); err != nil {
					b.Fatal(err)
				}
				first := claim(1)
				if len(first) != 1 {
					b.Fatalf("claimed %d first steps, want 1", len(first))
				}
				if _, err := st.RecordOutcomes(ctx, []store.Outcome{{TaskID: first[0].ID, LeaseToken: first[0].LeaseToken,
					Kind: store.Succeed, Output: output}}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				got := claim(batch)
				if len(got) != batch {
					b.Fatalf("claimed %d elements, want %d", len(got), batch)
				}
				if n := len(got[batch-1].Inputs); n < width {
					b.Fatalf("the last element claimed has %d bytes of inputs, want the array", n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*batch), "us/task")
		})
	}
}
