package store

import (
	"fmt"
	"strconv"
	"strings"
)

// The queue limits as people type and read them (the CLI's flags, the dashboard's
// form): a count is "N", a rate "N/Ss" (N claims per S seconds; "N/S" too), and "none"
// is no limit.

// NoLimitText is how a removed limit is typed and shown.
const NoLimitText = "none"

// ParseCountChange reads a concurrency limit: N or none. Validate the patch for range.
func ParseCountChange(field, text string) (*Change[int], error) {
	text = strings.TrimSpace(text)
	if strings.EqualFold(text, NoLimitText) {
		return &Change[int]{}, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q: want a whole number, or %s for no limit", ErrInvalid, field, text, NoLimitText)
	}
	return &Change[int]{To: &n}, nil
}

// ParseRateChange reads a rate limit: N/Ss (e.g. 100/1s, 10/60s; the s may be left
// out) or none. Validate the patch for range.
func ParseRateChange(field, text string) (*Change[RateLimit], error) {
	text = strings.TrimSpace(text)
	if strings.EqualFold(text, NoLimitText) {
		return &Change[RateLimit]{}, nil
	}
	bad := fmt.Errorf("%w: %s %q: want N/Ss (N claims per S seconds, e.g. 100/1s), or %s for no limit", ErrInvalid, field, text, NoLimitText)
	limit, per, ok := strings.Cut(text, "/")
	if !ok {
		return nil, bad
	}
	n, err := strconv.Atoi(strings.TrimSpace(limit))
	if err != nil {
		return nil, bad
	}
	s, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(per), "s"))
	if err != nil {
		return nil, bad
	}
	return &Change[RateLimit]{To: &RateLimit{Limit: n, PerSeconds: s}}, nil
}

// FormatCount shows a count limit as ParseCountChange reads it.
func FormatCount(n *int) string {
	if n == nil {
		return NoLimitText
	}
	return strconv.Itoa(*n)
}

// FormatRate shows a rate limit as ParseRateChange reads it.
func FormatRate(r *RateLimit) string {
	if r == nil {
		return NoLimitText
	}
	return fmt.Sprintf("%d/%ds", r.Limit, r.PerSeconds)
}
