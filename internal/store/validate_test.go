package store

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateErrorIsStorable(t *testing.T) {
	cases := map[string]string{
		"short":          "boom",
		"nul":            "a\x00b",
		"invalid utf-8":  "bad \xff\xfe bytes",
		"long multibyte": strings.Repeat("é", MaxErrorMessageLength), // 2 bytes each: the cut lands mid-rune
		"long ascii":     strings.Repeat("x", MaxErrorMessageLength+1),
	}
	for name, in := range cases {
		out := TruncateError(in)
		if !utf8.ValidString(out) || strings.ContainsRune(out, 0) {
			t.Errorf("%s: %q is not storable text", name, out)
		}
		if len(out) > MaxErrorMessageLength+len("…(truncated)") {
			t.Errorf("%s: %d bytes, more than the bound", name, len(out))
		}
	}
	if got := TruncateError("boom"); got != "boom" {
		t.Errorf("a short clean message changed: %q", got)
	}
}

func TestNormalizeRejectsPayloadsPostgresCannotStore(t *testing.T) {
	for _, payload := range []string{`{"a":"\u0000"}`, `"\ud800"`, `1e999999999`} {
		p := CreateParams{Kind: "k", Payload: []byte(payload)}
		if err := p.Normalize(); !errors.Is(err, ErrInvalid) {
			t.Errorf("payload %s: %v, want ErrInvalid", payload, err)
		}
	}
	p := CreateParams{Kind: "k", Payload: []byte(`{"ok": "\ud83d\ude00", "n": 1.5e3}`)}
	if err := p.Normalize(); err != nil {
		t.Errorf("a storable payload was rejected: %v", err)
	}
}
