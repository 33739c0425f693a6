package store

import (
	"errors"
	"testing"
)

func TestLimitText(t *testing.T) {
	for text, want := range map[string]string{"5": "5", " 12 ": "12", "none": "none", "NONE": "none"} {
		c, err := ParseCountChange("concurrency", text)
		if err != nil || FormatCount(c.To) != want {
			t.Errorf("count %q = %v, %v; want %s", text, c, err, want)
		}
	}
	for text, want := range map[string]string{"100/1s": "100/1s", "10/60": "10/60s", " 3 / 2s ": "3/2s", "none": "none"} {
		c, err := ParseRateChange("rate", text)
		if err != nil || FormatRate(c.To) != want {
			t.Errorf("rate %q = %v, %v; want %s", text, c, err, want)
		}
	}
	for _, text := range []string{"", "x", "1.5", "5/"} {
		if _, err := ParseCountChange("concurrency", text); !errors.Is(err, ErrInvalid) {
			t.Errorf("count %q: %v, want ErrInvalid", text, err)
		}
		if _, err := ParseRateChange("rate", text); !errors.Is(err, ErrInvalid) {
			t.Errorf("rate %q: %v, want ErrInvalid", text, err)
		}
	}
	// Out of range values parse; the patch's Validate refuses them.
	c, _ := ParseRateChange("rate", "0/1s")
	if err := (QueuePatch{Rate: c}).Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("0/1s validated: %v", err)
	}
}
