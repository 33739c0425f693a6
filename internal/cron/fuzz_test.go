package cron_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/cron"
)

// FuzzParse: Parse never panics, accepts exactly what the model accepts (naming the same
// field when it rejects), and every accepted spec has a next tick strictly after any
// instant: the one the model finds. (Gaps between ticks can be long: "0 0 29 2 */7",
// Feb 29 on a Sunday, skips 40 years from 2088 to 2128; so the model scans up to 50.)
func FuzzParse(f *testing.F) {
	for _, s := range validSpecs {
		f.Add(s, int64(0), uint8(0))
	}
	for _, c := range invalidSpecs {
		f.Add(c.spec, int64(1e9), uint8(1))
	}
	for _, c := range edgeCases {
		f.Add(c.spec, int64(1.7e9), uint8(2))
	}
	f.Fuzz(func(t *testing.T, spec string, unix int64, zi uint8) {
		s, err := cron.Parse(spec)
		r, field := refParse(spec)
		if err != nil {
			var se *cron.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %v is not a *SpecError", spec, err)
			}
			if se.Field != field {
				t.Fatalf("Parse(%q): %v; the model names %q", spec, err, field)
			}
			return
		}
		if r == nil {
			t.Fatalf("Parse(%q) accepts; the model rejects it (%s)", spec, field)
		}
		// after: 1970-2100 in seconds, some sub-second.
		after := time.Unix(unix%(130*365*86400), (unix%3)*333_333_333).UTC()
		if after.Before(time.Unix(0, 0)) {
			after = after.Add(130 * 365 * 24 * time.Hour)
		}
		next := s.Next(after, time.UTC)
		if !next.After(after) {
			t.Fatalf("Next(%q, %s) = %s, not after", spec, after, next)
		}
		want, ok := refNextUTC(r, after, 50*366*24*time.Hour)
		if !ok || !want.Equal(next) {
			t.Fatalf("Next(%q, %s) = %s; the model finds %s (%v)", spec, after, next, want, ok)
		}
		// In a zone with DST, the tick is after `after` too.
		zone := stableZones[int(zi)%len(stableZones)]
		if n := s.Next(after, mustLoad(zone)); !n.After(after) || n.Sub(after) > 50*366*24*time.Hour {
			t.Fatalf("Next(%q, %s, %s) = %s", spec, after, zone, n)
		}
	})
}
