package validate

import (
	"errors"
	"strings"
	"testing"
)

func TestProblems(t *testing.T) {
	var p Problems
	if p.Err() != nil {
		t.Fatalf("empty Problems: %v", p.Err())
	}
	p.Check(true, "never")
	p.Add(nil)
	if p.Err() != nil {
		t.Fatalf("only passing checks: %v", p.Err())
	}
	boom := errors.New("boom")
	p.Check(false, "limit must be positive, got %d", -1)
	p.Add(boom)
	err := p.Err()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "limit must be positive, got -1") || strings.Contains(err.Error(), "never") {
		t.Fatalf("Err() = %v: want both recorded problems and nothing else", err)
	}
}

func TestToken(t *testing.T) {
	for raw, want := range map[string]string{"": "", "s3cret": "s3cret", "s3cret\n": "s3cret", " \ts3cret\r\n": "s3cret", "é-ü:/+=": "é-ü:/+="} {
		if got, err := Token(raw); err != nil || got != want {
			t.Errorf("Token(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{" ", "\n", "s3 cret", "s3\tcret", "s3\x00cret", "s3\x7fcret", "a\u00a0b", "a\nb"} {
		if got, err := Token(raw); err == nil || got != "" {
			t.Errorf("Token(%q) = %q, %v; want an error", raw, got, err)
		} else if strings.Contains(err.Error(), strings.TrimSpace(raw)) && strings.TrimSpace(raw) != "" {
			t.Errorf("Token(%q): the error repeats the token: %v", raw, err)
		}
	}
}
