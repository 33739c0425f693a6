package sqsmode

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
)

func TestClientKeepsEnoughIdleConnections(t *testing.T) {
	client, err := NewClient(context.Background(), ClientConfig{Endpoint: "http://127.0.0.1:1", Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	hc, ok := client.Options().HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		t.Fatalf("HTTP client is %T, want the SDK's BuildableClient", client.Options().HTTPClient)
	}
	tr := hc.GetTransport()
	if tr.MaxIdleConnsPerHost != maxIdleConns || tr.MaxIdleConns != maxIdleConns {
		t.Errorf("idle connections: %d per host, %d in all; want %d (the SDK's default of 10 per host makes "+
			"every call past the tenth at once open a new connection)", tr.MaxIdleConnsPerHost, tr.MaxIdleConns, maxIdleConns)
	}
}

// countingResolver counts the resolutions it is asked for.
type countingResolver struct {
	next  sqs.EndpointResolverV2
	calls int
}

func (r *countingResolver) ResolveEndpoint(ctx context.Context, p sqs.EndpointParameters) (smithyendpoints.Endpoint, error) {
	r.calls++
	return r.next.ResolveEndpoint(ctx, p)
}

// The client resolves an endpoint once per set of parameters, not once per call, and
// still answers each set with what the SDK's rules say.
func TestClientResolvesEachEndpointOnce(t *testing.T) {
	ctx := context.Background()
	counting := &countingResolver{next: sqs.NewDefaultEndpointResolverV2()}
	cached := &cachedEndpoints{next: counting}
	params := func(region, endpoint string) sqs.EndpointParameters {
		p := sqs.EndpointParameters{Region: aws.String(region), UseDualStack: aws.Bool(false), UseFIPS: aws.Bool(false)}
		if endpoint != "" {
			p.Endpoint = aws.String(endpoint)
		}
		return p
	}
	for _, tc := range []struct {
		region, endpoint, want string
		calls                  int
	}{
		{"us-east-1", "http://127.0.0.1:4566", "http://127.0.0.1:4566", 1},
		{"us-east-1", "http://127.0.0.1:4566", "http://127.0.0.1:4566", 1}, // equal values, new pointers
		{"eu-west-1", "", "https://sqs.eu-west-1.amazonaws.com", 2},
		{"eu-west-1", "", "https://sqs.eu-west-1.amazonaws.com", 2},
		{"us-east-1", "", "https://sqs.us-east-1.amazonaws.com", 3},
	} {
		e, err := cached.ResolveEndpoint(ctx, params(tc.region, tc.endpoint))
		if err != nil {
			t.Fatal(err)
		}
		if got := e.URI.String(); got != tc.want || counting.calls != tc.calls {
			t.Errorf("%s %q: %s after %d resolutions, want %s after %d", tc.region, tc.endpoint, got, counting.calls, tc.want, tc.calls)
		}
	}
	client, err := NewClient(ctx, ClientConfig{Endpoint: "http://127.0.0.1:1", Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := client.Options().EndpointResolverV2.(*cachedEndpoints); !ok {
		t.Errorf("NewClient's endpoint resolver is %T, want *cachedEndpoints", client.Options().EndpointResolverV2)
	}
}
