package sqstest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Region is the region of every client made here. fauxqs takes the region from the
// request's signature and keeps queues per region, so all clients must agree.
const Region = "us-east-1"

// callTimeout bounds one helper call; a long poll takes 20 s at most.
const callTimeout = 30 * time.Second

// NewClient returns an SQS client for an emulator at endpoint: static credentials (fauxqs
// checks none), region us-east-1, every request sent to endpoint whatever the queue URL.
func NewClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	})
}

// Client returns a new client for the server.
func (s *Server) Client(t testing.TB) *sqs.Client {
	t.Helper()
	return NewClient(s.endpoint)
}

// CreateQueue creates a standard queue (or finds an existing one of that name) and
// returns its URL, failing t on error.
func (s *Server) CreateQueue(t testing.TB, name string) (url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	out, err := s.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("sqstest: create queue %q: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// Counts is what a queue holds, from its Approximate* attributes (exact in fauxqs).
type Counts struct {
	Visible  int // ready to be received
	InFlight int // received, not deleted, visibility timeout not over
	Delayed  int // sent with a delay that has not passed
}

// Total is every message the queue holds.
func (c Counts) Total() int { return c.Visible + c.InFlight + c.Delayed }

// CountMessages returns what the queue at queueURL holds, failing t on error.
func (s *Server) CountMessages(t testing.TB, queueURL string) Counts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c, err := QueueCounts(ctx, s.client, queueURL)
	if err != nil {
		t.Fatalf("sqstest: %v", err)
	}
	return c
}

// QueueCounts is CountMessages for any client and context.
func QueueCounts(ctx context.Context, client *sqs.Client, queueURL string) (Counts, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return Counts{}, fmt.Errorf("queue attributes of %s: %w", queueURL, err)
	}
	var c Counts
	for name, dst := range map[types.QueueAttributeName]*int{
		types.QueueAttributeNameApproximateNumberOfMessages:           &c.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &c.InFlight,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &c.Delayed,
	} {
		n, err := strconv.Atoi(out.Attributes[string(name)])
		if err != nil {
			return Counts{}, fmt.Errorf("queue attribute %s of %s: %q is not a count", name, queueURL, out.Attributes[string(name)])
		}
		*dst = n
	}
	return c, nil
}
