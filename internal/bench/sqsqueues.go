package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/rotaqueue/rota/internal/sqsmode"
)

// sqsQueueTimeout bounds creating or deleting the benchmark's SQS queues.
const sqsQueueTimeout = 30 * time.Second

// benchSQSQueues are the SQS queues of one SQS workload, all named
// rota-bench-<random>...: the queue of the benchmark's Rota queue, the dead-letter
// queue, and the ceiling's queue. Unique names keep a run off anyone else's queues, and
// off a queue an earlier run failed to delete.
type benchSQSQueues struct {
	client  *sqs.Client
	prefix  string
	queues  *sqsmode.Queues // the Rota queue's and the DLQ, as SQS mode addresses them
	created []string        // every name create was asked for, for deleteAll
}

// createBenchSQSQueues creates the SQS queue of Rota queue rotaQueue and the DLQ, the
// way `rota worker --mode sqs --sqs-create-queues` would with unique names.
func createBenchSQSQueues(ctx context.Context, client *sqs.Client, rotaQueue string) (*benchSQSQueues, error) {
	prefix := "rota-bench-" + randomHex(4)
	queues, err := sqsmode.NewQueues(client, sqsmode.QueueConfig{Queue: prefix, DLQ: prefix + "-dlq", Create: true},
		[]string{rotaQueue})
	if err != nil {
		return nil, err
	}
	q := &benchSQSQueues{client: client, prefix: prefix, queues: queues,
		created: []string{queues.Name(rotaQueue), prefix + "-dlq"}}
	rctx, cancel := context.WithTimeout(ctx, sqsQueueTimeout)
	defer cancel()
	if err := queues.Resolve(rctx, true); err != nil {
		return nil, errors.Join(fmt.Errorf("create the benchmark's SQS queues: %w", err), q.deleteAll(context.WithoutCancel(ctx)))
	}
	return q, nil
}

// create creates one more queue, <prefix>-<suffix>, and returns its URL.
func (q *benchSQSQueues) create(ctx context.Context, suffix string) (string, error) {
	name := q.prefix + "-" + suffix
	q.created = append(q.created, name)
	ctx, cancel := context.WithTimeout(ctx, sqsQueueTimeout)
	defer cancel()
	out, err := q.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("create SQS queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// deleteAll deletes every queue created, skipping those that do not exist.
func (q *benchSQSQueues) deleteAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, sqsQueueTimeout)
	defer cancel()
	var errs []error
	for _, name := range q.created {
		out, err := q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		var missing *types.QueueDoesNotExist
		if errors.As(err, &missing) {
			continue
		}
		if err == nil {
			_, err = q.client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete SQS queue %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
