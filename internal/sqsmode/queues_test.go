package sqsmode

import (
	"context"
	"strings"
	"testing"

	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

// offline is a client for naming tests: nothing is sent.
var offline = sqstest.NewClient("http://127.0.0.1:1")

func TestQueueNamesFollowTheDefaultQueue(t *testing.T) {
	qs, err := NewQueues(offline, QueueConfig{Queue: "jobs", DLQ: "jobs-dead"}, []string{"default", "emails", "Reports_2"})
	if err != nil {
		t.Fatal(err)
	}
	for rq, want := range map[string]string{"default": "jobs", "emails": "jobs-emails", "Reports_2": "jobs-Reports_2", "other": ""} {
		if got := qs.Name(rq); got != want {
			t.Errorf("Name(%q) = %q, want %q", rq, got, want)
		}
	}
	if qs.dlq.name != "jobs-dead" {
		t.Errorf("DLQ name %q, want jobs-dead", qs.dlq.name)
	}

	defaults, err := NewQueues(offline, QueueConfig{}, []string{"default"})
	if err != nil {
		t.Fatal(err)
	}
	if defaults.Name("default") != DefaultQueue || defaults.dlq.name != DefaultDLQ {
		t.Errorf("defaults: queue %q, DLQ %q; want %q and %q", defaults.Name("default"), defaults.dlq.name, DefaultQueue, DefaultDLQ)
	}
}

func TestQueueURLsAreSuffixedInTheirLastSegment(t *testing.T) {
	base := "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs"
	qs, err := NewQueues(offline, QueueConfig{Queue: base, DLQ: "https://sqs.eu-west-1.amazonaws.com/123456789012/dead"}, []string{"default", "emails"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for rq, want := range map[string]string{"default": base, "emails": base + "-emails"} {
		q, _ := qs.forRota(rq)
		// A configured URL is used as given: no call to SQS (the offline client would fail).
		if got, err := q.url(ctx); err != nil || got != want {
			t.Errorf("url of %q = %q, %v; want %q", rq, got, err, want)
		}
	}
	if got, _ := qs.dlq.url(ctx); got != "https://sqs.eu-west-1.amazonaws.com/123456789012/dead" {
		t.Errorf("DLQ url %q", got)
	}
}

func TestBadQueueNamesAreRefusedAtStart(t *testing.T) {
	cases := []struct {
		cfg    QueueConfig
		queues []string
		want   string
	}{
		{QueueConfig{}, []string{"billing.eu"}, `"rota-billing.eu" is not a valid SQS queue name`},
		{QueueConfig{}, []string{"ns:jobs"}, `"rota-ns:jobs" is not a valid SQS queue name`},
		{QueueConfig{}, []string{"q" + strings.Repeat("x", 80)}, "is not a valid SQS queue name"},
		{QueueConfig{Queue: "jobs.fifo"}, []string{"default"}, "not FIFO"},
		{QueueConfig{Queue: "has space"}, []string{"default"}, `"has space" is not a valid SQS queue name`},
		{QueueConfig{DLQ: "dead letters"}, []string{"default"}, "dead-letter queue"},
		{QueueConfig{Queue: "https://sqs.example.com/"}, []string{"default"}, "is not a queue URL"},
		{QueueConfig{}, []string{"bad queue"}, "queue"},
		{QueueConfig{}, nil, "at least one Rota queue"},
		// A Rota queue whose SQS queue is the DLQ: its workers would take dead-letter
		// events for poison and delete them.
		{QueueConfig{}, []string{"default", "dlq"}, `Rota queue "dlq" maps to SQS queue "rota-dlq", the dead-letter queue`},
		{QueueConfig{Queue: "jobs", DLQ: "jobs-dead"}, []string{"dead"}, "the dead-letter queue"},
		{QueueConfig{DLQ: "rota"}, []string{"default"}, `Rota queue "default" maps to SQS queue "rota", the dead-letter queue`},
		{QueueConfig{Queue: "https://sqs.example.com/1/jobs", DLQ: "https://sqs.example.com/1/jobs-x"}, []string{"x"}, "the dead-letter queue"},
	}
	for _, tc := range cases {
		_, err := NewQueues(offline, tc.cfg, tc.queues)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewQueues(%+v, %q) = %v, want an error containing %q", tc.cfg, tc.queues, err, tc.want)
		}
	}
	// The same name in another account is another queue.
	otherAccount := QueueConfig{Queue: "https://sqs.eu-west-1.amazonaws.com/111/rota", DLQ: "https://sqs.eu-west-1.amazonaws.com/222/rota-dlq"}
	if _, err := NewQueues(offline, otherAccount, []string{"default", "dlq"}); err != nil {
		t.Errorf("queue dlq of account 111 and the DLQ of account 222: %v, want them apart", err)
	}
}

func TestResolveFindsCreatesOrRefusesQueues(t *testing.T) {
	t.Parallel()
	srv := sqstest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()

	missing, err := NewQueues(client, QueueConfig{Queue: "absent"}, []string{"default"})
	if err != nil {
		t.Fatal(err)
	}
	err = missing.Resolve(ctx, false)
	if err == nil || !strings.Contains(err.Error(), `SQS queue "absent" does not exist`) || !strings.Contains(err.Error(), "--sqs-create-queues") {
		t.Fatalf("Resolve of a missing queue: %v, want a clear error naming the queue and the flag", err)
	}

	created, err := NewQueues(client, QueueConfig{Queue: "work", Create: true}, []string{"default", "emails"})
	if err != nil {
		t.Fatal(err)
	}
	if err := created.Resolve(ctx, true); err != nil {
		t.Fatalf("Resolve with create: %v", err)
	}
	for _, name := range []string{"work", "work-emails", DefaultDLQ} {
		url := srv.CreateQueue(t, name) // finds the existing queue
		if !strings.HasSuffix(url, "/"+name) {
			t.Errorf("queue %q has URL %q", name, url)
		}
	}
	q, _ := created.forRota("emails")
	if got, _ := q.url(ctx); got != srv.CreateQueue(t, "work-emails") {
		t.Errorf("resolved URL %q is not the one SQS returns", got)
	}

	// Found by name, without creating: the queues now exist.
	found, err := NewQueues(client, QueueConfig{Queue: "work"}, []string{"emails"})
	if err != nil {
		t.Fatal(err)
	}
	if err := found.Resolve(ctx, true); err != nil {
		t.Errorf("Resolve of existing queues: %v", err)
	}
}
