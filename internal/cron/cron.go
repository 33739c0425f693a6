// Package cron parses 5-field cron specs and computes their next tick, with the semantics
// of Vixie cron / cronie (the crontab Linux users know). rota.next_cron_tick, the
// PL/pgSQL function of migration 0003, implements exactly the same semantics; a property
// test keeps the two in agreement.
//
// # Syntax
//
// A spec is five fields separated by blanks (space, tab, newline, CR, VT, FF):
//
//	minute (0-59)  hour (0-23)  day-of-month (1-31)  month (1-12)  day-of-week (0-7)
//
// Each field is a comma-separated list of items. An item is *, a value, or a range a-b
// (a <= b), optionally followed by /step (step >= 1): */15, 1-30/5, and 5/10 which means
// 5 to the field's end every 10. Months may be written jan..dec and days of the week
// sun..sat, in any case (three letters, as cronie). Day-of-week 0 and 7 are both Sunday,
// also inside ranges and steps (5-7 is Friday to Sunday; */2 steps over 0-7). The
// keywords @yearly (= @annually) "0 0 1 1 *", @monthly "0 0 1 * *", @weekly "0 0 * * 0",
// @daily (= @midnight) "0 0 * * *" and @hourly "0 * * * *" are accepted in any case;
// @reboot is not (a schedule has no reboot).
//
// The day rule is cronie's: if either day field starts with * (so * or */2), a day must
// match both day-of-month and day-of-week; otherwise it matches if either matches. So
// "0 0 13 * 5" fires on every 13th and every Friday, "0 0 */2 * 5" on odd-numbered days
// that are Fridays.
//
// A spec that can never fire (0 0 30 2 *, 0 0 31 4,6,9,11 *) is rejected at parse time
// with an error naming day-of-month (February counts 29 days: 0 0 29 2 * is valid and
// fires in leap years). Every accepted spec fires infinitely often.
//
// # Time zones and DST
//
// Ticks are local wall-clock minutes in the schedule's time zone, mapped to instants:
//
//   - a wall time that exists once is that instant;
//   - a wall time that does not exist (skipped by a spring-forward gap) fires at the
//     first instant after the gap, i.e. the transition itself. All ticks inside one gap
//     collapse into that single firing, which is also the firing of a tick at the gap's
//     end (with a 02:00 -> 03:00 gap, 02:00, 02:30 and 03:00 all fire once, at 03:00
//     summer time);
//   - a wall time that occurs twice (fall-back overlap) fires once, at its first
//     occurrence; ticks are not repeated during the second pass of the clock.
//
// The mapping is non-decreasing, so the next tick after an instant t is the image of the
// first matching wall time whose image is after t. The computation assumes that a zone
// changes its UTC offset at most once within any 32 hours (true of every zone in the tz
// database since the 1950s, and of all DST rules); it never loops more than a bounded
// number of times whatever the zone.
//
// Time zones are IANA names (Europe/Berlin, UTC). "Local" and the leap-second "right/"
// zones are rejected, and so are CET, EET, MET and WET, which PostgreSQL reads as fixed
// abbreviations while the tz database gives them DST rules: use Europe/Paris etc.
package cron

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zones work without a system tz database
)

// Field names used in errors.
const (
	FieldSpec       = "spec"
	FieldMinute     = "minute"
	FieldHour       = "hour"
	FieldDayOfMonth = "day-of-month"
	FieldMonth      = "month"
	FieldDayOfWeek  = "day-of-week"
	FieldTimezone   = "timezone"
)

// SpecError is an invalid spec (or time zone). Field is one of the Field constants.
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return e.Field + ": " + e.Msg }

// Spec is a parsed cron spec. It is immutable and safe for concurrent use.
type Spec struct {
	src    string
	minute uint64 // bits 0-59
	hour   uint64 // bits 0-23
	dom    uint64 // bits 1-31
	month  uint64 // bits 1-12
	dow    uint64 // bits 0-6 (7 folded into 0)
	dayAnd bool   // a day field starts with '*': a day must match both
}

// String returns the spec as given to Parse, without surrounding blanks.
func (s *Spec) String() string { return s.src }

var keywords = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

type fieldDef struct {
	name   string
	lo, hi int
	names  []string
}

var fields = [5]fieldDef{
	{FieldMinute, 0, 59, nil},
	{FieldHour, 0, 23, nil},
	{FieldDayOfMonth, 1, 31, nil},
	{FieldMonth, 1, 12, []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{FieldDayOfWeek, 0, 7, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// blanks separate fields (ASCII only, the same set as the SQL function).
const blanks = " \t\n\r\v\f"

func isBlank(r rune) bool { return strings.ContainsRune(blanks, r) }

// maxDays is the longest each month can be (February: 29, in leap years).
var maxDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// Parse parses a cron spec. Errors are *SpecError.
func Parse(spec string) (*Spec, error) {
	src := strings.Trim(spec, blanks)
	if src == "" {
		return nil, &SpecError{FieldSpec, "empty cron spec"}
	}
	text := src
	if text[0] == '@' {
		exp, ok := keywords[strings.ToLower(text)]
		if !ok {
			return nil, &SpecError{FieldSpec, `unknown keyword "` + text + `"`}
		}
		text = exp
	}
	parts := strings.FieldsFunc(text, isBlank)
	if len(parts) != 5 {
		return nil, &SpecError{FieldSpec, "expected 5 fields (minute hour day-of-month month day-of-week), got " + strconv.Itoa(len(parts))}
	}
	s := &Spec{src: src}
	var bits [5]uint64
	for i, f := range fields {
		b, err := parseField(f, parts[i])
		if err != nil {
			return nil, err
		}
		bits[i] = b
	}
	s.minute, s.hour, s.dom, s.month = bits[0], bits[1], bits[2], bits[3]
	s.dow = bits[4]&0x7f | bits[4]>>7&1
	s.dayAnd = parts[2][0] == '*' || parts[4][0] == '*'
	if s.dayAnd {
		// A day must match day-of-month; some month must have such a day. (Any valid
		// date falls on every weekday in some year, Feb 29 included.)
		ok := false
		for m := 1; m <= 12 && !ok; m++ {
			ok = s.month>>m&1 == 1 && s.dom&(uint64(1)<<(maxDays[m]+1)-2) != 0
		}
		if !ok {
			return nil, &SpecError{FieldDayOfMonth, `day "` + parts[2] + `" never occurs in month "` + parts[3] + `"`}
		}
	}
	return s, nil
}

func parseField(f fieldDef, text string) (uint64, error) {
	fail := func(msg string) (uint64, error) { return 0, &SpecError{f.name, msg} }
	var bits uint64
	for _, item := range strings.Split(text, ",") {
		if item == "" {
			return fail(`empty item in list "` + text + `"`)
		}
		base, stepText, hasStep := strings.Cut(item, "/")
		if strings.Contains(stepText, "/") {
			return fail(`invalid item "` + item + `"`)
		}
		var a, b int
		if base == "*" {
			a, b = f.lo, f.hi
		} else {
			first, second, isRange := strings.Cut(base, "-")
			if strings.Contains(second, "-") {
				return fail(`invalid item "` + item + `"`)
			}
			var err error
			if a, err = value(f, first, item); err != nil {
				return 0, err
			}
			switch {
			case isRange:
				if b, err = value(f, second, item); err != nil {
					return 0, err
				}
				if a > b {
					return fail(`range "` + base + `" is reversed`)
				}
			case hasStep:
				b = f.hi
			default:
				b = a
			}
		}
		step := 1
		if hasStep {
			if stepText == "" || !allDigits(stepText) {
				return fail(`invalid step "` + stepText + `" in "` + item + `"`)
			}
			if len(stepText) > 9 {
				return fail(`step ` + stepText + ` is out of range`)
			}
			step, _ = strconv.Atoi(stepText)
			if step == 0 {
				return fail(`step must be at least 1 in "` + item + `"`)
			}
		}
		for v := a; v <= b; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

// value parses one number or name of field f.
func value(f fieldDef, tok, item string) (int, error) {
	switch {
	case tok == "":
		return 0, &SpecError{f.name, `missing value in "` + item + `"`}
	case allDigits(tok):
		n, err := strconv.Atoi(tok)
		if err != nil || len(tok) > 9 || n < f.lo || n > f.hi {
			return 0, &SpecError{f.name, tok + " is out of range " + strconv.Itoa(f.lo) + "-" + strconv.Itoa(f.hi)}
		}
		return n, nil
	case f.names != nil && len(tok) == 3 && isLetters(tok):
		low := strings.ToLower(tok)
		for i, n := range f.names {
			if n == low {
				return i + f.lo, nil
			}
		}
	}
	return 0, &SpecError{f.name, `invalid value "` + tok + `"`}
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// zoneName is the syntax of IANA zone names; it keeps out POSIX TZ strings.
var zoneName = regexp.MustCompile(`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`)

// digitZones are the zone names without '/' that contain digits.
var digitZones = map[string]bool{"GMT+0": true, "GMT-0": true, "GMT0": true, "EST5EDT": true, "CST6CDT": true, "MST7MDT": true, "PST8PDT": true}

// abbreviationZones are tz database names PostgreSQL reads as fixed-offset abbreviations
// although the tz database gives them DST rules; both implementations reject them.
var abbreviationZones = map[string]bool{"CET": true, "EET": true, "MET": true, "WET": true}

// LoadLocation loads a schedule's time zone: an IANA name, "" meaning UTC. It accepts the
// names rota.next_cron_tick accepts (except that PostgreSQL also ignores case). Errors
// are *SpecError naming the timezone field.
func LoadLocation(tz string) (*time.Location, error) {
	if tz == "" || tz == "UTC" {
		return time.UTC, nil
	}
	unknown := &SpecError{FieldTimezone, `unknown time zone "` + tz + `"`}
	lower, upper := strings.ToLower(tz), strings.ToUpper(tz)
	if !zoneName.MatchString(tz) || strings.HasPrefix(lower, "right/") || lower == "local" || lower == "localtime" {
		return nil, unknown
	}
	if !strings.Contains(tz, "/") {
		if strings.ContainsAny(tz, "0123456789") && !digitZones[upper] {
			return nil, unknown
		}
		if abbreviationZones[upper] {
			return nil, &SpecError{FieldTimezone, `"` + tz + `" is a time zone abbreviation, not a zone name (use e.g. Europe/Paris)`}
		}
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, unknown
	}
	return loc, nil
}

// NextTick parses spec and returns its first tick strictly after after, in time zone
// tz ("" = UTC), in UTC. Errors are *SpecError (Field "timezone" for an unknown zone).
func NextTick(spec string, after time.Time, tz string) (time.Time, error) {
	s, err := Parse(spec)
	if err != nil {
		return time.Time{}, err
	}
	loc, err := LoadLocation(tz)
	if err != nil {
		return time.Time{}, err
	}
	return s.Next(after, loc), nil
}
