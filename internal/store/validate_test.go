package store

import (
	"errors"
	"regexp"
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

// namePattern is the rule isPlainName implements.
var namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:-]*$`)

// TestIsPlainNameMatchesPattern: the hand-written check accepts exactly what the pattern
// accepts, on names built from every byte at every position that matters.
func TestIsPlainNameMatchesPattern(t *testing.T) {
	names := []string{"", "a", "Z", "a1", "1a", "_a", "a_b.c:d-e", "queue-1", "a b", "é", "aé", "a\x00"}
	for c := range 256 {
		b := string([]byte{byte(c)})
		names = append(names, b, "a"+b, b+"a", "a"+b+"z")
	}
	for _, n := range names {
		if got, want := isPlainName(n), namePattern.MatchString(n); got != want {
			t.Errorf("isPlainName(%q) = %v, the pattern says %v", n, got, want)
		}
	}
}
