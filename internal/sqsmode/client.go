package sqsmode

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DefaultRegion is the region used when the AWS configuration names none (an emulator
// needs one to sign requests, and fauxqs keeps its queues per region).
const DefaultRegion = "us-east-1"

// maxIdleConns is how many idle connections the client keeps to SQS. The SDK keeps 10
// per host; a worker has more calls in flight than that (a long poll per fetch loop and
// queue, background deletes and visibility changes), and so has an enqueuer with several
// rounds sending at once. Past the tenth, every finished call closed its connection and
// the next one opened (and, against AWS, TLS-handshook) a new one: measured with fauxqs,
// a new connection for a third of all calls and about 15% more CPU per task.
const maxIdleConns = 256

// ClientConfig says where SQS is.
type ClientConfig struct {
	// Endpoint is an SQS-compatible endpoint such as http://127.0.0.1:4566
	// (ROTA_SQS_ENDPOINT). Empty means AWS itself, found from the region.
	Endpoint string
	// Region overrides the region of the AWS configuration. Default: the standard chain's
	// (AWS_REGION, the shared config file), else DefaultRegion.
	Region string
	// Credentials overrides the standard AWS credential chain (tests use static ones).
	Credentials aws.CredentialsProvider
}

// NewClient builds an SQS client from the standard AWS configuration chain (environment,
// shared files, SSO, instance roles), pointed at cfg.Endpoint when one is given.
func NewClient(ctx context.Context, cfg ClientConfig) (*sqs.Client, error) {
	opts := []func(*config.LoadOptions) error{config.WithHTTPClient(newHTTPClient())}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("sqs: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	return sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}), nil
}

// newHTTPClient is the SDK's default HTTP client keeping up to maxIdleConns idle
// connections.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns = maxIdleConns
		tr.MaxIdleConnsPerHost = maxIdleConns
	})
}
