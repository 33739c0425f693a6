package browserguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHostRule(t *testing.T) {
	for host, ok := range map[string]bool{
		"127.0.0.1":               true,
		"127.0.0.1:8080":          true,
		"10.1.2.3:80":             true,
		"[::1]:8080":              true,
		"[::1]":                   true,
		"localhost":               true,
		"LocalHost:8080":          true,
		"":                        true,
		"evil.example":            false,
		"evil.example:8080":       false,
		"rota.internal:8080":      false,
		"localhost.evil.example":  false,
		"127.0.0.1.nip.io:8080":   false,
		"localhost.:8080":         false,
		"[evil.example]:8080":     false,
		"0x7f000001:8080":         false,
		"127.0.0.1.evil.example:": false,
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		err := Check(req, false)
		var he *HostError
		if got := err == nil; got != ok || (!ok && !errors.As(err, &he)) {
			t.Errorf("Host %q without a token: %v, want allowed=%v", host, err, ok)
		}
		if err := Check(req, true); err != nil {
			t.Errorf("Host %q with a token: %v, want allowed", host, err)
		}
	}
}

func TestCrossOriginRule(t *testing.T) {
	for _, tc := range []struct {
		method, header, value string
		ok                    bool
	}{
		{"POST", "", "", true}, // the CLI, workers, curl
		{"POST", "Sec-Fetch-Site", "same-origin", true},
		{"POST", "Sec-Fetch-Site", "none", true},
		{"POST", "Sec-Fetch-Site", "cross-site", false},
		{"POST", "Sec-Fetch-Site", "same-site", false},
		{"PATCH", "Sec-Fetch-Site", "cross-site", false},
		{"DELETE", "Sec-Fetch-Site", "cross-site", false},
		{"POST", "Origin", "https://evil.example", false},
		{"POST", "Origin", "http://127.0.0.1:8080", true},
		{"GET", "Sec-Fetch-Site", "cross-site", true}, // safe methods pass
		{"HEAD", "Origin", "https://evil.example", true},
	} {
		for _, hasToken := range []bool{false, true} {
			req := httptest.NewRequest(tc.method, "/api/tasks", nil)
			req.Host = "127.0.0.1:8080"
			if tc.header != "" {
				req.Header.Set(tc.header, tc.value)
			}
			err := Check(req, hasToken)
			if got := err == nil; got != tc.ok || (!tc.ok && !errors.Is(err, ErrCrossOrigin)) {
				t.Errorf("%s with %s: %q (token %v): %v, want allowed=%v", tc.method, tc.header, tc.value, hasToken, err, tc.ok)
			}
		}
	}
}
