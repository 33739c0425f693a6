package tracing

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestFromHeaderKeepsAValidTraceparent(t *testing.T) {
	h := http.Header{}
	h.Set("traceparent", parent)
	h.Set("tracestate", "rojo=00f067aa0ba902b7")
	got := FromHeader(h)
	if got["traceparent"] != parent || got["tracestate"] != "rojo=00f067aa0ba902b7" {
		t.Fatalf("FromHeader = %v", got)
	}
	sc := trace.SpanContextFromContext(Extract(context.Background(), got))
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !sc.IsRemote() {
		t.Fatalf("Extract: %v remote %v", sc.TraceID(), sc.IsRemote())
	}
	if sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("Extract: span %v", sc.SpanID())
	}
}

func TestFromHeaderIgnoresMalformedOrMissing(t *testing.T) {
	for _, v := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-zz-01"} {
		h := http.Header{}
		if v != "" {
			h.Set("traceparent", v)
		}
		if got := FromHeader(h); got != nil {
			t.Errorf("traceparent %q: FromHeader = %v, want nil", v, got)
		}
	}
	if got := Inject(context.Background()); got != nil {
		t.Errorf("Inject of an untraced context = %v", got)
	}
}

func TestEnabledFollowsTheStandardVariables(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, c := range cases {
		for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"} {
			t.Setenv(k, c.env[k])
		}
		if got := Enabled(); got != c.want {
			t.Errorf("env %v: Enabled = %v, want %v", c.env, got, c.want)
		}
	}
}
