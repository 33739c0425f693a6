package sqsmode

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/uuid"

	"github.com/rotaqueue/rota/internal/runtime"
	"github.com/rotaqueue/rota/internal/store"
	"github.com/rotaqueue/rota/internal/store/memory"
	"github.com/rotaqueue/rota/internal/testutil/sqstest"
	"github.com/rotaqueue/rota/internal/testutil/testio"
)

// slowGets holds every GetTask until released, as a slow store would: judging an
// unclaimed message (sortOut) then takes that long.
type slowGets struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (s *slowGets) GetTask(ctx context.Context, id uuid.UUID) (*store.Task, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return s.Store.GetTask(ctx, id)
}

// A claimed task's lease runs from its claim, so the claim hands it to the runtime at
// once, even when every background slot is busy (SQS slow to delete settled messages)
// and sorting out the batch's other messages would have to wait for the store: that
// work moves to the next Fetch, before it receives.
func TestClaimedTasksAreNotHeldBackBySortingOutTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := sqstest.Start(t)
	client := srv.Client(t)
	mem := memory.New()
	t.Cleanup(mem.Close)
	st := &slowGets{Store: mem, entered: make(chan struct{}, 1), release: make(chan struct{})}
	qs, err := NewQueues(client, QueueConfig{Queue: "rota", DLQ: "rota-dlq", Create: true}, []string{store.DefaultQueue})
	if err != nil {
		t.Fatal(err)
	}
	if err := qs.Resolve(ctx, true); err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(nil)
	src, err := NewSource(SourceConfig{Store: st, Client: client, Queues: qs, WorkerID: "w", LeaseDuration: 5 * time.Second,
		WaitSeconds: 1, Metrics: m, Logger: slog.New(slog.NewTextHandler(testio.TestOutput(t), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	var once bool
	release := func() {
		if !once {
			once = true
			close(st.release)
		}
	}
	t.Cleanup(release) // before Close

	// One ENQUEUED task, and a message naming it and one naming no task.
	res, err := mem.CreateTasks(ctx, []store.CreateParams{{Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	task := res[0].Task
	if _, err := mem.EnqueueDue(ctx, store.EnqueueParams{Limit: 10, RedeliverAfter: time.Hour},
		func(_ context.Context, ids []uuid.UUID) ([]uuid.UUID, error) { return ids, nil }); err != nil {
		t.Fatal(err)
	}
	q, _ := qs.forRota(store.DefaultQueue)
	url, err := q.url(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{task.ID.String(), uuid.NewString()} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []types.Message
	for deadline := time.Now().Add(30 * time.Second); len(msgs) < 2 && time.Now().Before(deadline); {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: 60})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, out.Messages...)
	}
	if len(msgs) != 2 {
		t.Fatalf("received %d messages, want 2", len(msgs))
	}

	for range cap(src.acks.slots) { // every background slot busy
		src.acks.slots <- struct{}{}
	}
	claimed := make(chan []runtime.Delivery, 1)
	go func() {
		d, err := src.claim(ctx, store.DefaultQueue, url, msgs)
		if err != nil {
			t.Errorf("claim: %v", err)
		}
		claimed <- d
	}()
	select {
	case d := <-claimed:
		if len(d) != 1 || d[0].Task.ID != task.ID {
			t.Fatalf("claimed %d deliveries, want task %s", len(d), task.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the claimed task was held back while the other message waited for the store")
	}

	// The next Fetch sorts the other message out (it names no task: deleted) first.
	fetched := make(chan error, 1)
	go func() {
		_, err := src.Fetch(ctx, store.DefaultQueue, 1)
		fetched <- err
	}()
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the next Fetch did not sort out the left-over message")
	}
	release()
	if err := <-fetched; err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if got := m.Stats().DeletedDuplicate; got != 1 {
		t.Fatalf("deleted %d messages as duplicates, want 1", got)
	}
}
