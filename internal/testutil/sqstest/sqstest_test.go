package sqstest_test

import (
	"context"
	"errors"
	"net/http/httptrace"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/rotaqueue/rota/internal/testutil/sqstest"
)

// callCtx bounds one SQS call of a test, so a broken server fails the test rather than
// hanging it; it is no assertion about speed.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestBatchSendReceiveDelete(t *testing.T) {
	t.Parallel()
	srv := sqstest.Start(t)
	client := srv.Client(t)
	url := srv.CreateQueue(t, "batch")

	var sent []string
	entries := make([]types.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		body := "task-" + strconv.Itoa(i)
		sent = append(sent, body)
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body)}
	}
	out, err := client.SendMessageBatch(callCtx(t), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 10 || len(out.Failed) != 0 {
		t.Fatalf("send batch: %d successful, %d failed; want 10, 0", len(out.Successful), len(out.Failed))
	}
	if got := srv.CountMessages(t, url); got != (sqstest.Counts{Visible: 10}) {
		t.Fatalf("after send: %+v, want 10 visible", got)
	}

	var received []types.Message
	for len(received) < 10 {
		out, err := client.ReceiveMessage(callCtx(t), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 5,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			t.Fatalf("a long poll came back empty with %d of 10 messages received", len(received))
		}
		received = append(received, out.Messages...)
	}
	var bodies []string
	for _, m := range received {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	slices.Sort(bodies)
	if !slices.Equal(bodies, sent) {
		t.Fatalf("received %v, want %v", bodies, sent)
	}
	if got := srv.CountMessages(t, url); got != (sqstest.Counts{InFlight: 10}) {
		t.Fatalf("after receive: %+v, want 10 in flight", got)
	}

	del := make([]types.DeleteMessageBatchRequestEntry, len(received))
	for i, m := range received {
		del[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
	}
	delOut, err := client.DeleteMessageBatch(callCtx(t), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
	if err != nil {
		t.Fatal(err)
	}
	if len(delOut.Successful) != 10 || len(delOut.Failed) != 0 {
		t.Fatalf("delete batch: %d successful, %d failed; want 10, 0", len(delOut.Successful), len(delOut.Failed))
	}
	if got := srv.CountMessages(t, url); got.Total() != 0 {
		t.Fatalf("after delete: %+v, want an empty queue", got)
	}
}

func TestChangeMessageVisibility(t *testing.T) {
	t.Parallel()
	srv := sqstest.Start(t)
	client := srv.Client(t)
	url := srv.CreateQueue(t, "visibility")
	sendOne(t, client, url, "deferred")

	first := receiveOne(t, client, url)
	// The longest visibility SQS allows, then one second more.
	if _, err := client.ChangeMessageVisibility(callCtx(t), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 43200,
	}); err != nil {
		t.Fatalf("visibility 43200 (12 h): %v", err)
	}
	if _, err := client.ChangeMessageVisibility(callCtx(t), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 43201,
	}); !strings.HasSuffix(apiCode(err), "InvalidParameterValue") {
		t.Fatalf("visibility 43201: got %v, want InvalidParameterValue", err)
	}
	if got := srv.CountMessages(t, url); got != (sqstest.Counts{InFlight: 1}) {
		t.Fatalf("after extending: %+v, want 1 in flight", got)
	}

	// Visibility 0 hands the message straight back, as a deferral to now would.
	if _, err := client.ChangeMessageVisibility(callCtx(t), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		t.Fatal(err)
	}
	if got := srv.CountMessages(t, url); got != (sqstest.Counts{Visible: 1}) {
		t.Fatalf("after visibility 0: %+v, want 1 visible", got)
	}
	second := receiveOne(t, client, url)
	if aws.ToString(second.MessageId) != aws.ToString(first.MessageId) {
		t.Fatalf("received %s again, want %s", aws.ToString(second.MessageId), aws.ToString(first.MessageId))
	}
	if n := second.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; n != "2" {
		t.Fatalf("receive count %q, want 2", n)
	}
	if aws.ToString(second.ReceiptHandle) == aws.ToString(first.ReceiptHandle) {
		t.Fatal("a second receive kept the receipt handle; want a new one")
	}
}

// TestStaleReceiptHandle pins down what fauxqs does with the handle of an earlier receive:
// a delete succeeds without deleting anything, a visibility change fails.
func TestStaleReceiptHandle(t *testing.T) {
	t.Parallel()
	srv := sqstest.Start(t)
	client := srv.Client(t)
	url := srv.CreateQueue(t, "stale")
	sendOne(t, client, url, "leased twice")

	stale := receiveOne(t, client, url)
	if _, err := client.ChangeMessageVisibility(callCtx(t), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: stale.ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		t.Fatal(err)
	}
	current := receiveOne(t, client, url)

	if _, err := client.DeleteMessage(callCtx(t), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: stale.ReceiptHandle}); err != nil {
		t.Fatalf("delete with a stale handle: %v, want silent success", err)
	}
	batch, err := client.DeleteMessageBatch(callCtx(t), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("stale"), ReceiptHandle: stale.ReceiptHandle},
	}})
	if err != nil || len(batch.Successful) != 1 || len(batch.Failed) != 0 {
		t.Fatalf("batch delete with a stale handle: %v, %+v; want it reported successful", err, batch)
	}
	if got := srv.CountMessages(t, url); got != (sqstest.Counts{InFlight: 1}) {
		t.Fatalf("after deletes with a stale handle: %+v, want the message still in flight", got)
	}

	_, err = client.ChangeMessageVisibility(callCtx(t), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: stale.ReceiptHandle, VisibilityTimeout: 60,
	})
	var notInflight *types.MessageNotInflight
	if !errors.As(err, &notInflight) {
		t.Fatalf("visibility change with a stale handle: got %v, want MessageNotInflight", err)
	}
	vis, err := client.ChangeMessageVisibilityBatch(callCtx(t), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("stale"), ReceiptHandle: stale.ReceiptHandle, VisibilityTimeout: 60},
	}})
	if err != nil || len(vis.Failed) != 1 || aws.ToString(vis.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		t.Fatalf("batch visibility change with a stale handle: %v, %+v; want the entry failed with ReceiptHandleIsInvalid", err, vis)
	}

	if _, err := client.DeleteMessage(callCtx(t), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: current.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if got := srv.CountMessages(t, url); got.Total() != 0 {
		t.Fatalf("after deleting with the current handle: %+v, want an empty queue", got)
	}
}

// TestLongPollWakesOnSend: a waiting ReceiveMessage returns as soon as one message arrives,
// with that one message, long before its WaitTimeSeconds and without filling the batch.
func TestLongPollWakesOnSend(t *testing.T) {
	t.Parallel()
	srv := sqstest.Start(t)
	client := srv.Client(t)
	url := srv.CreateQueue(t, "longpoll")

	// Well under the 20 s wait: a poll that did not wake on the send would fail here.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	polling := make(chan struct{})
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(polling) }})
	type result struct {
		out *sqs.ReceiveMessageOutput
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
		done <- result{out, err}
	}()
	<-polling
	sendOne(t, client, url, "wake up")

	r := <-done
	if r.err != nil {
		t.Fatalf("long poll: %v", r.err)
	}
	if len(r.out.Messages) != 1 || aws.ToString(r.out.Messages[0].Body) != "wake up" {
		t.Fatalf("long poll returned %+v, want the one message sent", r.out.Messages)
	}
}

func TestGetQueueURL(t *testing.T) {
	t.Parallel()
	srv := sqstest.Start(t)
	client := srv.Client(t)
	url := srv.CreateQueue(t, "named")

	// The URL's host is not the endpoint: requests must go to BaseEndpoint.
	if want := "http://sqs.us-east-1.localhost:" + port(t, srv.Endpoint()) + "/000000000000/named"; url != want {
		t.Fatalf("queue URL %s, want %s", url, want)
	}
	out, err := client.GetQueueUrl(callCtx(t), &sqs.GetQueueUrlInput{QueueName: aws.String("named")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.QueueUrl) != url {
		t.Fatalf("GetQueueUrl = %s, want %s (from CreateQueue)", aws.ToString(out.QueueUrl), url)
	}
	if again := srv.CreateQueue(t, "named"); again != url {
		t.Fatalf("creating an existing queue gave %s, want %s", again, url)
	}
	_, err = client.GetQueueUrl(callCtx(t), &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	if !isQueueDoesNotExist(err) {
		t.Fatalf("GetQueueUrl of a missing queue: got %v, want QueueDoesNotExist", err)
	}
}

func TestKillAndRestartLoseEverything(t *testing.T) {
	t.Parallel()
	srv := sqstest.Start(t)
	client := srv.Client(t)
	endpoint := srv.Endpoint()
	url := srv.CreateQueue(t, "outage")
	sendOne(t, client, url, "lost")

	srv.Kill()
	// One attempt: the SDK would otherwise retry the refused connection, with backoff.
	noRetry := func(o *sqs.Options) { o.RetryMaxAttempts = 1 }
	if _, err := client.GetQueueUrl(callCtx(t), &sqs.GetQueueUrlInput{QueueName: aws.String("outage")}, noRetry); err == nil {
		t.Fatal("GetQueueUrl succeeded while the server was killed")
	}
	srv.Kill() // a second Kill is harmless

	srv.Restart()
	if srv.Endpoint() != endpoint {
		t.Fatalf("endpoint after restart %s, want %s", srv.Endpoint(), endpoint)
	}
	_, err := client.GetQueueUrl(callCtx(t), &sqs.GetQueueUrlInput{QueueName: aws.String("outage")})
	if !isQueueDoesNotExist(err) {
		t.Fatalf("GetQueueUrl after restart: got %v, want QueueDoesNotExist", err)
	}
	// The same name gives the same URL again, and the queue is empty.
	if again := srv.CreateQueue(t, "outage"); again != url {
		t.Fatalf("recreated queue at %s, want %s", again, url)
	}
	if got := srv.CountMessages(t, url); got.Total() != 0 {
		t.Fatalf("recreated queue holds %+v, want nothing", got)
	}

	srv.Restart() // a restart of a running server kills it first
	if _, err := client.GetQueueUrl(callCtx(t), &sqs.GetQueueUrlInput{QueueName: aws.String("outage")}); !isQueueDoesNotExist(err) {
		t.Fatalf("GetQueueUrl after a second restart: got %v, want QueueDoesNotExist", err)
	}
}

func port(t *testing.T, endpoint string) string {
	t.Helper()
	u, err := neturl.Parse(endpoint)
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Fatalf("endpoint %q: want http://127.0.0.1:PORT", endpoint)
	}
	return u.Port()
}

func sendOne(t *testing.T, client *sqs.Client, url, body string) {
	t.Helper()
	if _, err := client.SendMessage(callCtx(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

func receiveOne(t *testing.T, client *sqs.Client, url string) types.Message {
	t.Helper()
	out, err := client.ReceiveMessage(callCtx(t), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 1, WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("received %d messages, want 1", len(out.Messages))
	}
	return out.Messages[0]
}

// apiCode is the error's code as the SDK reports it: for codes SQS does not model as a
// type, the query-protocol form, e.g. AWS.SimpleQueueService.InvalidParameterValue.
func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func isQueueDoesNotExist(err error) bool {
	var missing *types.QueueDoesNotExist
	return errors.As(err, &missing)
}
