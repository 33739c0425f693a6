package sqstest

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/rotaqueue/rota/internal/sqsceiling"
)

// MeasureCeiling pushes messages through the queue at queueURL as fast as SQS itself
// allows, with nothing else in the way: clients goroutines send batches of 10 while
// clients goroutines receive (batches of 10, long polling) and delete them (batches of
// 10). It returns messages per second from the first send to the last delete: the
// ceiling against which Rota's SQS mode is measured. The queue should start empty;
// it ends empty. It is sqsceiling.Measure, which `rota bench` uses too.
func MeasureCeiling(ctx context.Context, client *sqs.Client, queueURL string, messages, clients int) (perSecond float64, err error) {
	res, err := sqsceiling.Measure(ctx, client, queueURL, messages, clients)
	if err != nil {
		return 0, err
	}
	return res.PerSecond(), nil
}
