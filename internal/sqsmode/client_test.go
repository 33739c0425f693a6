package sqsmode

import (
	"context"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
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
