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
