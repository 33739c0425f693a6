package cron_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rotaqueue/rota/internal/cron"
)

type edgeCase struct {
	spec, after, tz string
	want            string // hand-checked, RFC 3339 in the zone's local time
}

const (
	berlin   = "Europe/Berlin"
	newYork  = "America/New_York"
	lordHowe = "Australia/Lord_Howe"
	saoPaulo = "America/Sao_Paulo"
	auckland = "Pacific/Auckland"
)

// edgeCases are checked by hand (weekdays: 2024-01-01 and 2024-04-01 were Mondays,
// 2024-09-01 a Sunday, 2025-02-01 a Saturday).
var edgeCases = []edgeCase{
	// basics, strictly after
	{"*/15 * * * *", "2026-02-12T14:27:00Z", "UTC", "2026-02-12T14:30:00Z"},
	{"*/15 * * * *", "2026-02-12T14:30:00Z", "UTC", "2026-02-12T14:45:00Z"},
	{"*/15 * * * *", "2026-02-12T14:29:59.999999Z", "UTC", "2026-02-12T14:30:00Z"},
	{"0 9 * * *", "2026-02-12T09:00:00Z", "UTC", "2026-02-13T09:00:00Z"},
	{"0 9 * * *", "2026-02-12T08:00:00Z", "", "2026-02-12T09:00:00Z"},
	{"* * * * *", "2026-02-12T08:00:30Z", "UTC", "2026-02-12T08:01:00Z"},
	{"0,30 9,17 * * *", "2026-02-12T09:30:00Z", "UTC", "2026-02-12T17:00:00Z"},
	// */7 across hour, day and year ends
	{"*/7 * * * *", "2024-01-01T10:53:00Z", "UTC", "2024-01-01T10:56:00Z"},
	{"*/7 * * * *", "2024-01-01T10:56:00Z", "UTC", "2024-01-01T11:00:00Z"},
	{"*/7 * * * *", "2024-12-31T23:56:00Z", "UTC", "2025-01-01T00:00:00Z"},
	{"0 */7 * * *", "2024-01-01T21:00:00Z", "UTC", "2024-01-02T00:00:00Z"},
	// steps
	{"5/10 * * * *", "2024-01-01T10:00:00Z", "UTC", "2024-01-01T10:05:00Z"},
	{"5/10 * * * *", "2024-01-01T10:55:00Z", "UTC", "2024-01-01T11:05:00Z"},
	{"1-30/10 * * * *", "2024-01-01T10:21:00Z", "UTC", "2024-01-01T11:01:00Z"},
	{"0 0 31 */2 *", "2024-01-31T00:00:00Z", "UTC", "2024-03-31T00:00:00Z"},
	// month ends and leap years
	{"0 0 31 * *", "2024-04-15T00:00:00Z", "UTC", "2024-05-31T00:00:00Z"},
	{"0 12 30 * *", "2024-01-31T00:00:00Z", "UTC", "2024-03-30T12:00:00Z"},
	{"0 0 29 2 *", "2024-03-01T00:00:00Z", "UTC", "2028-02-29T00:00:00Z"},
	{"0 0 29 2 *", "2096-03-01T00:00:00Z", "UTC", "2104-02-29T00:00:00Z"}, // 2100 is no leap year
	{"@monthly", "2024-01-31T12:00:00Z", "UTC", "2024-02-01T00:00:00Z"},
	{"@daily", "2024-02-28T23:59:59Z", "UTC", "2024-02-29T00:00:00Z"},
	{"@midnight", "2023-02-28T00:00:00Z", "UTC", "2023-03-01T00:00:00Z"},
	// Feb 29 with a day-of-week restriction
	{"0 0 29 2 mon", "2025-01-01T00:00:00Z", "UTC", "2025-02-03T00:00:00Z"}, // either: first Monday of February
	{"0 0 29 2 mon", "2024-02-26T00:00:00Z", "UTC", "2024-02-29T00:00:00Z"}, // either: Feb 29 before the next Monday
	{"0 0 29 2 */7", "2025-01-01T00:00:00Z", "UTC", "2032-02-29T00:00:00Z"}, // both: Feb 29 on a Sunday
	{"0 0 29 2 */7", "2088-03-01T00:00:00Z", "UTC", "2128-02-29T00:00:00Z"}, // ... 40 years later (2100)
	{"0 0 30 2 1", "2025-01-01T00:00:00Z", "UTC", "2025-02-03T00:00:00Z"},   // never Feb 30, but Mondays
	{"0 0 13 3 */7", "2022-03-14T00:00:00Z", "UTC", "2033-03-13T00:00:00Z"}, // Sunday the 13th of March
	// year end
	{"59 23 31 12 *", "2024-12-31T23:59:00Z", "UTC", "2025-12-31T23:59:00Z"},
	{"0 0 1 1 *", "2024-12-31T23:59:30Z", "UTC", "2025-01-01T00:00:00Z"},
	// day-of-week: 7 and ranges to 7, names
	{"0 0 * * 5-7", "2024-01-04T12:00:00Z", "UTC", "2024-01-05T00:00:00Z"},
	{"0 0 * * 5-7", "2024-01-06T00:00:00Z", "UTC", "2024-01-07T00:00:00Z"},
	{"0 0 * * 5-7", "2024-01-07T00:00:00Z", "UTC", "2024-01-12T00:00:00Z"},
	{"0 0 * * 7", "2024-01-01T00:00:00Z", "UTC", "2024-01-07T00:00:00Z"},
	{"0 0 * * SUN", "2024-01-01T00:00:00Z", "UTC", "2024-01-07T00:00:00Z"},
	{"30 8 * * MON-fri", "2024-01-06T00:00:00Z", "UTC", "2024-01-08T08:30:00Z"},
	{"0 0 1 JUL,jan *", "2024-02-01T00:00:00Z", "UTC", "2024-07-01T00:00:00Z"},
	{"0 0 * Feb-Mar/1 Sat", "2024-01-01T00:00:00Z", "UTC", "2024-02-03T00:00:00Z"},
	// keywords
	{"@yearly", "2024-06-01T00:00:00Z", "UTC", "2025-01-01T00:00:00Z"},
	{"@ANNUALLY", "2024-06-01T00:00:00Z", "UTC", "2025-01-01T00:00:00Z"},
	{"@weekly", "2024-01-07T00:00:00Z", "UTC", "2024-01-14T00:00:00Z"},
	{"@Hourly", "2026-02-12T14:30:00Z", "UTC", "2026-02-12T15:00:00Z"},
	{"  @daily\t", "2026-02-12T14:30:00Z", "UTC", "2026-02-13T00:00:00Z"},
	// the day rule
	{"0 0 13 * 5", "2024-09-01T00:00:00Z", "UTC", "2024-09-06T00:00:00Z"},   // 13th or Friday
	{"0 0 */2 * 5", "2024-09-01T00:00:00Z", "UTC", "2024-09-13T00:00:00Z"},  // odd day and Friday
	{"0 0 13 * */2", "2024-09-01T00:00:00Z", "UTC", "2024-10-13T00:00:00Z"}, // 13th and Sun/Tue/Thu/Sat
	{"0 0 1,15 * 3", "2024-01-02T00:00:00Z", "UTC", "2024-01-03T00:00:00Z"},
	{"0 0 1 * *", "2024-01-02T00:00:00Z", "UTC", "2024-02-01T00:00:00Z"},
	{"0 0 *,13 * 5", "2024-09-07T00:00:00Z", "UTC", "2024-09-13T00:00:00Z"}, // starts with *: both
	// Europe/Berlin: 2024-03-31 02:00 CET -> 03:00 CEST (01:00Z); 2024-10-27 03:00 CEST -> 02:00 CET (01:00Z)
	{"30 2 * * *", "2024-03-30T12:00:00Z", berlin, "2024-03-31T03:00:00+02:00"},
	{"30 2 * * *", "2024-03-31T01:00:00Z", berlin, "2024-04-01T02:30:00+02:00"},
	{"0 2 * * *", "2024-03-31T01:00:00Z", berlin, "2024-04-01T02:00:00+02:00"},
	{"0 3 * * *", "2024-03-30T12:00:00Z", berlin, "2024-03-31T03:00:00+02:00"},
	{"*/15 * * * *", "2024-03-31T00:50:00Z", berlin, "2024-03-31T03:00:00+02:00"},
	{"*/15 * * * *", "2024-03-31T00:59:59Z", berlin, "2024-03-31T03:00:00+02:00"},
	{"*/15 * * * *", "2024-03-31T01:00:00Z", berlin, "2024-03-31T03:15:00+02:00"},
	{"30 2 * * *", "2024-10-26T12:00:00Z", berlin, "2024-10-27T02:30:00+02:00"},
	{"30 2 * * *", "2024-10-27T00:30:00Z", berlin, "2024-10-28T02:30:00+01:00"},
	{"0 2 * * *", "2024-10-26T12:00:00Z", berlin, "2024-10-27T02:00:00+02:00"},
	{"*/20 * * * *", "2024-10-27T00:50:00Z", berlin, "2024-10-27T03:00:00+01:00"},
	{"*/20 * * * *", "2024-10-27T01:00:00Z", berlin, "2024-10-27T03:00:00+01:00"},
	{"*/20 * * * *", "2024-10-27T01:59:59Z", berlin, "2024-10-27T03:00:00+01:00"},
	{"0 * * * *", "2024-10-27T00:00:00Z", berlin, "2024-10-27T03:00:00+01:00"},
	// America/New_York: 2024-03-10 02:00 EST -> 03:00 EDT (07:00Z); 2024-11-03 02:00 EDT -> 01:00 EST (06:00Z)
	{"30 2 * * *", "2024-03-09T12:00:00Z", newYork, "2024-03-10T03:00:00-04:00"},
	{"0 2 * * 0", "2024-03-09T00:00:00Z", newYork, "2024-03-10T03:00:00-04:00"},
	{"30 1 * * *", "2024-11-02T12:00:00Z", newYork, "2024-11-03T01:30:00-04:00"},
	{"30 1 * * *", "2024-11-03T05:30:00Z", newYork, "2024-11-04T01:30:00-05:00"},
	{"*/30 * * * *", "2024-11-03T06:10:00Z", newYork, "2024-11-03T02:00:00-05:00"},
	{"0 * * * *", "2024-11-03T05:00:00Z", newYork, "2024-11-03T02:00:00-05:00"},
	// Australia/Lord_Howe, a 30-minute DST: 2024-10-06 02:00 -> 02:30 (15:30Z); 2024-04-07 02:00 -> 01:30 (15:00Z)
	{"15 2 * * *", "2024-10-05T00:00:00Z", lordHowe, "2024-10-06T02:30:00+11:00"},
	{"45 1 * * *", "2024-04-06T00:00:00Z", lordHowe, "2024-04-07T01:45:00+11:00"},
	{"*/10 * * * *", "2024-04-06T15:05:00Z", lordHowe, "2024-04-07T02:00:00+10:30"},
	// America/Sao_Paulo, DST at midnight: 2018-11-04 00:00 -> 01:00; 2019-02-17 00:00 -> 2019-02-16 23:00
	{"0 0 * * *", "2018-11-03T12:00:00Z", saoPaulo, "2018-11-04T01:00:00-02:00"},
	{"30 23 * * *", "2019-02-16T12:00:00Z", saoPaulo, "2019-02-16T23:30:00-02:00"},
	{"30 23 * * *", "2019-02-17T01:30:00Z", saoPaulo, "2019-02-17T23:30:00-03:00"},
	{"0 0 * * *", "2019-02-16T12:00:00Z", saoPaulo, "2019-02-17T00:00:00-03:00"},
	// Pacific/Auckland: 2024-09-29 02:00 -> 03:00; 2024-04-07 03:00 -> 02:00
	{"30 2 * * *", "2024-09-28T00:00:00Z", auckland, "2024-09-29T03:00:00+13:00"},
	{"30 2 * * *", "2024-04-06T00:00:00Z", auckland, "2024-04-07T02:30:00+13:00"},
	// a fixed offset and a month end in local time
	{"0 0 1 * *", "2024-01-31T18:30:00Z", "Asia/Kolkata", "2024-03-01T00:00:00+05:30"},
}

func TestEdgeCases(t *testing.T) {
	t.Parallel()
	for _, c := range edgeCases {
		after, err := time.Parse(time.RFC3339Nano, c.after)
		if err != nil {
			t.Fatal(err)
		}
		want, err := time.Parse(time.RFC3339, c.want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cron.NextTick(c.spec, after, c.tz)
		if err != nil {
			t.Errorf("NextTick(%q, %s, %q): %v", c.spec, c.after, c.tz, err)
			continue
		}
		if !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("NextTick(%q, %s, %q) = %s, want %s", c.spec, c.after, c.tz, got.Format(time.RFC3339), c.want)
		}
		// The brute-force model agrees (when the answer is near enough to walk to).
		if want.Sub(after) < 40*24*time.Hour {
			r, field := refParse(c.spec)
			if r == nil {
				t.Fatalf("model rejects %q (%s)", c.spec, field)
			}
			if m, ok := refNext(r, after, mustLoad(c.tz), want.Sub(after)+time.Hour); !ok || !m.Equal(want) {
				t.Errorf("model: %q after %s in %q = %s, want %s", c.spec, c.after, c.tz, m.Format(time.RFC3339), c.want)
			}
		}
	}
}

// raceEnabled is set by race_test.go.
var raceEnabled bool

type invalidCase struct{ spec, field string }

var invalidSpecs = []invalidCase{
	{"", "spec"},
	{" \t ", "spec"},
	{"* * * *", "spec"},
	{"* * * * * *", "spec"},
	{"0 0 * * * /bin/true", "spec"},
	{"@reboot", "spec"},
	{"@REBOOT", "spec"},
	{"@", "spec"},
	{"@daily extra", "spec"},
	{"@every 5m", "spec"},
	{"0\u00a00 * * *", "spec"}, // only ASCII blanks separate fields
	{"60 * * * *", "minute"},
	{"-1 * * * *", "minute"},
	{"5-1 * * * *", "minute"},
	{"*/0 * * * *", "minute"},
	{"0/0 * * * *", "minute"},
	{"1,,2 * * * *", "minute"},
	{",1 * * * *", "minute"},
	{"1, * * * *", "minute"},
	{"a * * * *", "minute"},
	{"jan * * * *", "minute"},
	{"1-2-3 * * * *", "minute"},
	{"*/ * * * *", "minute"},
	{"*/x * * * *", "minute"},
	{"1/2/3 * * * *", "minute"},
	{"** * * * *", "minute"},
	{"*-5 * * * *", "minute"},
	{"1.5 * * * *", "minute"},
	{"+5 * * * *", "minute"},
	{"1- * * * *", "minute"},
	{"99999999999 * * * *", "minute"},
	{"*/99999999999 * * * *", "minute"},
	{"L * * * *", "minute"},
	{"? * * * *", "minute"},
	{"* 24 * * *", "hour"},
	{"* 0-24 * * *", "hour"},
	{"* 1-30/0 * * *", "hour"},
	{"* * 0 * *", "day-of-month"},
	{"* * 32 * *", "day-of-month"},
	{"* * 1-32 * *", "day-of-month"},
	{"* * L * *", "day-of-month"},
	{"* * 15W * *", "day-of-month"},
	{"* * * 13 *", "month"},
	{"* * * 0 *", "month"},
	{"* * * foo *", "month"},
	{"* * * dec-jan *", "month"},
	{"* * * january *", "month"},
	{"* * * mon *", "month"},
	{"* * * 1-jan/0 *", "month"},
	{"* * * * 8", "day-of-week"},
	{"* * * * mon-sun", "day-of-week"}, // sun is 0: use mon-7
	{"* * * * 7-5", "day-of-week"},
	{"* * * * sunday", "day-of-week"},
	{"* * * * jan", "day-of-week"},
	{"* * * * 1#2", "day-of-week"},
	{"* * * * 5L", "day-of-week"},
	{"0 0 30 2 *", "day-of-month"},
	{"0 0 31 2 *", "day-of-month"},
	{"0 0 30,31 feb *", "day-of-month"},
	{"0 0 30-31 2 *", "day-of-month"},
	{"0 0 31 4,6,9,11 *", "day-of-month"},
	{"0 0 31 apr-jun/2 *", "day-of-month"}, // April, June
	{"0 0 31 4 */2", "day-of-month"},       // day-of-week starts with *: both must match
	{"61 24 32 13 8", "minute"},            // the first bad field is named
	{"0 24 30 2 *", "hour"},
}

func TestInvalidSpecs(t *testing.T) {
	t.Parallel()
	for _, c := range invalidSpecs {
		_, err := cron.Parse(c.spec)
		var se *cron.SpecError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SpecError", c.spec, err)
			continue
		}
		if se.Field != c.field || !strings.HasPrefix(err.Error(), c.field+": ") {
			t.Errorf("Parse(%q): %v, want field %s", c.spec, err, c.field)
		}
		if _, field := refParse(c.spec); field != c.field {
			t.Errorf("model: %q names %q, want %q", c.spec, field, c.field)
		}
		if _, err := cron.NextTick(c.spec, time.Now(), "UTC"); !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("NextTick(%q): %v, want field %s", c.spec, err, c.field)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"61 * * * *":           "minute: 61 is out of range 0-59",
		"* * * *":              "spec: expected 5 fields (minute hour day-of-month month day-of-week), got 4",
		"@reboot":              `spec: unknown keyword "@reboot"`,
		"":                     "spec: empty cron spec",
		"5-1 * * * *":          `minute: range "5-1" is reversed`,
		"*/0 * * * *":          `minute: step must be at least 1 in "*/0"`,
		"1,,2 * * * *":         `minute: empty item in list "1,,2"`,
		"* * * foo *":          `month: invalid value "foo"`,
		"0 0 30 2 *":           `day-of-month: day "30" never occurs in month "2"`,
		"* * * * 1-":           `day-of-week: missing value in "1-"`,
		"*/x * * * *":          `minute: invalid step "x" in "*/x"`,
		"1-2-3 * * * *":        `minute: invalid item "1-2-3"`,
		"*/1234567890 * * * *": "minute: step 1234567890 is out of range",
	} {
		_, err := cron.Parse(spec)
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %q", spec, err, want)
		}
	}
}

var validSpecs = []string{
	"* * * * *", "0 0 29 2 *", "0 0 30 2 1", "0 0 31 * *", "*/60 * * * *", "0 0 * * 0-7",
	"0 0 * * 7", "0 0 * * mon-7", "0 0 31 jan-feb *", "0 0 */31 2 *", "59 23 31 12 6",
	"0-59 0-23 1-31 1-12 0-7", "5/10 5/10 5/10 5/10 5/10", "00 08 01 01 00", "0 0 * * 1-5/2",
	"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@DAILY",
	"0\t0 *\n* *", "0 0 1,15 * 1,3,5", "0 0 29 2 */7", "*/5 * * * *", "1-59/2 * * * *",
}

func TestValidSpecs(t *testing.T) {
	t.Parallel()
	for _, spec := range validSpecs {
		s, err := cron.Parse(spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
			continue
		}
		if s.String() != strings.Trim(spec, " \t\n") {
			t.Errorf("String() = %q", s.String())
		}
		if r, field := refParse(spec); r == nil {
			t.Errorf("model rejects %q (%s)", spec, field)
		}
	}
}

func TestTimezones(t *testing.T) {
	t.Parallel()
	after := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tz := range []string{"Mars/Base", "CET", "cet", "WET", "UTC+3", "<+05>-5", "Local", "localtime",
		"right/UTC", "Europe/../Europe/Berlin", "Europe/Berlin ", "PST", "europe/berlin"} {
		_, err := cron.NextTick("* * * * *", after, tz)
		var se *cron.SpecError
		if !errors.As(err, &se) || se.Field != "timezone" || !strings.Contains(err.Error(), tz) {
			t.Errorf("NextTick(tz %q): %v, want a timezone error naming it", tz, err)
		}
	}
	for _, tz := range append([]string{"", "Etc/UTC", "GMT", "EST5EDT", "Etc/GMT+5", "EST"}, stableZones...) {
		if _, err := cron.NextTick("* * * * *", after, tz); err != nil {
			t.Errorf("NextTick(tz %q): %v", tz, err)
		}
	}
	// A nil location is UTC; the location of `after` does not matter.
	s, _ := cron.Parse("0 12 * * *")
	tokyo := mustLoad("Asia/Tokyo")
	if got := s.Next(after.In(tokyo), nil); !got.Equal(time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("Next(nil loc) = %s", got)
	}
	if got := s.Next(after, tokyo); !got.Equal(time.Date(2024, 1, 1, 3, 0, 0, 0, time.UTC)) {
		t.Errorf("Next(Tokyo) = %s", got)
	}
}

// TestAgainstModel compares Next with the brute-force model on random specs, instants
// and zones (the SQL property test then compares SQL with Next).
func TestAgainstModel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	n := 2000
	if testing.Short() || raceEnabled { // the brute-force model is slow under -race
		n = 300
	}
	locs := map[string]*time.Location{}
	trans := map[string][]time.Time{}
	for _, z := range stableZones {
		locs[z] = mustLoad(z)
		trans[z] = transitions(locs[z])
	}
	for i := 0; i < n; i++ {
		spec := randSpec(rng)
		zname := stableZones[rng.IntN(len(stableZones))]
		loc := locs[zname]
		after := randInstant(rng, loc, trans[zname])
		s, err := cron.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		r, field := refParse(spec)
		if r == nil {
			t.Fatalf("model rejects %q (%s)", spec, field)
		}
		got := s.Next(after, loc)
		if !got.After(after) {
			t.Fatalf("Next(%q, %s, %s) = %s, not after", spec, after, zname, got)
		}
		limit := min(got.Sub(after)+time.Minute, 3*24*time.Hour)
		want, ok := refNext(r, after, loc, limit)
		switch {
		case ok && !want.Equal(got):
			t.Errorf("Next(%q, %s, %s) = %s, model %s", spec, after.Format(time.RFC3339Nano), zname,
				got.In(loc).Format(time.RFC3339), want.In(loc).Format(time.RFC3339))
		case !ok && got.Sub(after) < limit:
			t.Errorf("Next(%q, %s, %s) = %s, model finds none", spec, after.Format(time.RFC3339Nano), zname,
				got.In(loc).Format(time.RFC3339))
		}
	}
}

func TestZeroSpec(t *testing.T) {
	t.Parallel()
	var s cron.Spec
	if got := s.Next(time.Now(), nil); !got.IsZero() {
		t.Errorf("zero Spec: Next = %s", got)
	}
}
