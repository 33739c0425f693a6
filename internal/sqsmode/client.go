package sqsmode

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DefaultRegion is the region used when the AWS configuration names none (an emulator
// needs one to sign requests, and fauxqs keeps its queues per region).
const DefaultRegion = "us-east-1"

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
	var opts []func(*config.LoadOptions) error
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
