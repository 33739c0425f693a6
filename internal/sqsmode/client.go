package sqsmode

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
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
		next := o.EndpointResolverV2
		if next == nil {
			next = sqs.NewDefaultEndpointResolverV2()
		}
		o.EndpointResolverV2 = &cachedEndpoints{next: next}
	}), nil
}

// cachedEndpoints remembers what the SDK's endpoint resolver answered for each set of
// parameters. The SDK resolves the endpoint on every call by running SQS's endpoint
// rules and parsing the resulting URL: about a third of a call's own CPU in the SDK,
// measured under the SQS drain (docs/performance.md). The answer depends only on the
// parameters (region, FIPS, dual stack, the configured endpoint), which a client keeps.
type cachedEndpoints struct {
	next  sqs.EndpointResolverV2
	cache sync.Map // endpointKey -> smithyendpoints.Endpoint
}

// endpointKey is sqs.EndpointParameters by value (its fields are pointers).
type endpointKey struct {
	region, endpoint string
	dualStack, fips  bool
	// set says which of the pointers were set: nil differs from a zero value.
	set [4]bool
}

func (c *cachedEndpoints) ResolveEndpoint(ctx context.Context, p sqs.EndpointParameters) (smithyendpoints.Endpoint, error) {
	key := endpointKey{region: aws.ToString(p.Region), endpoint: aws.ToString(p.Endpoint),
		dualStack: aws.ToBool(p.UseDualStack), fips: aws.ToBool(p.UseFIPS),
		set: [4]bool{p.Region != nil, p.Endpoint != nil, p.UseDualStack != nil, p.UseFIPS != nil}}
	if e, ok := c.cache.Load(key); ok {
		return e.(smithyendpoints.Endpoint), nil
	}
	e, err := c.next.ResolveEndpoint(ctx, p)
	if err == nil {
		c.cache.Store(key, e)
	}
	return e, err
}

// newHTTPClient is the SDK's default HTTP client keeping up to maxIdleConns idle
// connections.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns = maxIdleConns
		tr.MaxIdleConnsPerHost = maxIdleConns
	})
}
