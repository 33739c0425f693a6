package cron_test

// An independent, deliberately naive model of the semantics: a regexp parser that expands
// fields into sets, and a brute-force search that walks instants minute by minute. The
// fast implementations (Go and SQL) are checked against it.

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rotaqueue/rota/internal/cron"
)

type refSpec struct {
	sets             [5]map[int]bool // minute, hour, dom, month, dow (0-6)
	domStar, dowStar bool
}

var refItem = regexp.MustCompile(`^(\*|[0-9]+|[A-Za-z]+)(?:-([0-9]+|[A-Za-z]+))?(?:/([0-9]+))?$`)

var refFields = []struct {
	name   string
	lo, hi int
	names  string
}{
	{"minute", 0, 59, ""},
	{"hour", 0, 23, ""},
	{"day-of-month", 1, 31, ""},
	{"month", 1, 12, "jan feb mar apr may jun jul aug sep oct nov dec"},
	{"day-of-week", 0, 7, "sun mon tue wed thu fri sat"},
}

// refParse returns the parsed spec, or the field an error names.
func refParse(spec string) (*refSpec, string) {
	spec = strings.Trim(spec, " \t\n\r\v\f")
	if spec == "" {
		return nil, "spec"
	}
	expansions := map[string]string{
		"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
		"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
	}
	if strings.HasPrefix(spec, "@") {
		e, ok := expansions[strings.ToLower(spec)]
		if !ok {
			return nil, "spec"
		}
		spec = e
	}
	fs := regexp.MustCompile(`[ \t\n\r\v\f]+`).Split(spec, -1)
	if len(fs) != 5 {
		return nil, "spec"
	}
	r := &refSpec{domStar: fs[2][0] == '*', dowStar: fs[4][0] == '*'}
	for i, f := range refFields {
		set := map[int]bool{}
		num := func(tok string) (int, bool) {
			if n, err := strconv.Atoi(tok); err == nil && len(tok) <= 9 {
				return n, n >= f.lo && n <= f.hi
			}
			if _, err := strconv.Atoi(tok); err == nil || f.names == "" || len(tok) != 3 {
				return 0, false
			}
			for j, n := range strings.Fields(f.names) {
				if strings.EqualFold(n, tok) {
					return j + f.lo, true
				}
			}
			return 0, false
		}
		for _, item := range strings.Split(fs[i], ",") {
			m := refItem.FindStringSubmatch(item)
			if m == nil {
				return nil, f.name
			}
			a, b, step := f.lo, f.hi, 1
			if m[1] != "*" {
				var ok bool
				if a, ok = num(m[1]); !ok {
					return nil, f.name
				}
				switch {
				case m[2] != "":
					if b, ok = num(m[2]); !ok || a > b {
						return nil, f.name
					}
				case m[3] == "":
					b = a
				}
			} else if m[2] != "" {
				return nil, f.name
			}
			if m[3] != "" {
				s, err := strconv.Atoi(m[3])
				if err != nil || s == 0 || len(m[3]) > 9 {
					return nil, f.name
				}
				step = s
			}
			for v := a; v <= b; v += step {
				if i == 4 && v == 7 {
					set[0] = true // Sunday
				} else {
					set[v] = true
				}
			}
		}
		r.sets[i] = set
	}
	if r.domStar || r.dowStar {
		ok := false
		for m := range r.sets[3] {
			for d := range r.sets[2] {
				ok = ok || d <= []int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m]
			}
		}
		if !ok {
			return nil, "day-of-month"
		}
	}
	return r, ""
}

// matches reports whether the wall time t (read in UTC) is a tick.
func (r *refSpec) matches(t time.Time) bool {
	if !r.sets[0][t.Minute()] || !r.sets[1][t.Hour()] || !r.sets[3][int(t.Month())] {
		return false
	}
	dom, dow := r.sets[2][t.Day()], r.sets[4][int(t.Weekday())]
	if r.domStar || r.dowStar {
		return dom && dow
	}
	return dom || dow
}

// matchesDay reports whether some minute of the wall date of t is a tick.
func (r *refSpec) matchesDay(t time.Time) bool {
	return r.matches(time.Date(t.Year(), t.Month(), t.Day(), firstKey(r.sets[1]), firstKey(r.sets[0]), 0, 0, time.UTC))
}

func firstKey(m map[int]bool) int {
	for i := 0; i < 64; i++ {
		if m[i] {
			return i
		}
	}
	return -1
}

// refNext finds the first tick after `after` by walking instants minute by minute, up to
// limit; ok is false if there is none by then. An instant fires if its wall time matches
// and occurs for the first time, or if it ends a gap that skipped a matching wall time.
// It assumes whole-minute UTC offsets (true of the zones tested, 1970-2040).
func refNext(r *refSpec, after time.Time, loc *time.Location, limit time.Duration) (time.Time, bool) {
	var pStart, pEnd time.Time // the zone period of the last lookup
	var pOff time.Duration
	wall := func(t time.Time) time.Time {
		if t.Before(pStart) || !t.Before(pEnd) {
			lt := t.In(loc)
			_, off := lt.Zone()
			pOff = time.Duration(off) * time.Second
			if pStart, pEnd = lt.ZoneBounds(); pEnd.IsZero() {
				pEnd = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
			}
		}
		return t.Add(pOff).UTC()
	}
	t := after.Truncate(time.Minute).Add(-6 * time.Hour) // overlaps last an hour or less
	maxWall := wall(t)
	for end := after.Add(limit); !t.After(end); {
		prev := wall(t)
		t = t.Add(time.Minute)
		w := wall(t)
		fires := false
		switch {
		case !w.After(maxWall): // second pass of an overlap
		case w.Sub(prev) > time.Minute: // a gap ends at t
			for g := prev.Add(time.Minute); !g.After(w) && !fires; g = g.Add(time.Minute) {
				fires = r.matches(g)
			}
		default:
			fires = r.matches(w)
		}
		if w.After(maxWall) {
			maxWall = w
		}
		if fires && t.After(after) {
			return t, true
		}
	}
	return time.Time{}, false
}

// refNextUTC finds the first tick after `after` in UTC, skipping whole days that cannot
// match; fast enough to scan decades.
func refNextUTC(r *refSpec, after time.Time, limit time.Duration) (time.Time, bool) {
	t := after.UTC().Truncate(time.Minute).Add(time.Minute)
	for end := after.Add(limit); !t.After(end); {
		if !r.matchesDay(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if r.matches(t) {
			return t, true
		}
		t = t.Add(time.Minute)
	}
	return time.Time{}, false
}

// ---------------------------------------------------------------- random specs

var monthNames = strings.Fields("jan feb mar apr may jun jul aug sep oct nov dec")
var dowNames = strings.Fields("sun mon tue wed thu fri sat")

func randCase(rng *rand.Rand, s string) string {
	switch rng.IntN(3) {
	case 0:
		return strings.ToUpper(s)
	case 1:
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// randValue is a value of a field: a number or, for month and day-of-week, sometimes a name.
func randValue(rng *rand.Rand, field, v int) string {
	switch {
	case field == 3 && rng.IntN(3) == 0:
		return randCase(rng, monthNames[v-1])
	case field == 4 && v < 7 && rng.IntN(3) == 0:
		return randCase(rng, dowNames[v])
	}
	return strconv.Itoa(v)
}

func randItem(rng *rand.Rand, field int) string {
	lo, hi := refFields[field].lo, refFields[field].hi
	span := hi - lo + 1
	val := func() int { return lo + rng.IntN(span) }
	step := func() int {
		if rng.IntN(4) == 0 {
			return 1 + rng.IntN(span+2)
		}
		return 2 + rng.IntN(max(1, span/3))
	}
	switch rng.IntN(10) {
	case 0, 1:
		return "*/" + strconv.Itoa(step())
	case 2, 3:
		a, b := val(), val()
		if a > b {
			a, b = b, a
		}
		if field == 4 && rng.IntN(3) == 0 {
			b = 7 // ranges ending on Sunday as 7
		}
		return randValue(rng, field, a) + "-" + randValue(rng, field, b)
	case 4:
		a, b := val(), val()
		if a > b {
			a, b = b, a
		}
		return randValue(rng, field, a) + "-" + randValue(rng, field, b) + "/" + strconv.Itoa(step())
	case 5:
		return randValue(rng, field, val()) + "/" + strconv.Itoa(step()) // a/n: a to the end
	}
	return randValue(rng, field, val())
}

func randField(rng *rand.Rand, field int) string {
	// Mostly "*" for the slow fields so that specs fire often enough to be interesting.
	starOdds := []int{6, 4, 2, 2, 2}[field]
	if rng.IntN(starOdds) == 0 {
		return "*"
	}
	n := 1
	if rng.IntN(3) == 0 {
		n = 2 + rng.IntN(3)
	}
	items := make([]string, n)
	for i := range items {
		items[i] = randItem(rng, field)
	}
	return strings.Join(items, ",")
}

var keywordList = []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}

// randSpec returns a random valid spec.
func randSpec(rng *rand.Rand) string {
	for {
		var spec string
		if rng.IntN(25) == 0 {
			spec = randCase(rng, keywordList[rng.IntN(len(keywordList))])
		} else {
			fs := make([]string, 5)
			for i := range fs {
				fs[i] = randField(rng, i)
			}
			sep := " "
			if rng.IntN(10) == 0 {
				sep = " \t "
			}
			spec = strings.Join(fs, sep)
		}
		if _, err := cron.Parse(spec); err == nil {
			return spec
		}
	}
}

// ---------------------------------------------------------------- random instants

// stableZones have rules that are the same in every recent tz database release for
// 2000-2035 (so Go's embedded tzdata and the server's agree), and cover fixed offsets,
// half- and quarter-hour offsets, a 30-minute DST (Lord Howe), DST at midnight (Sao
// Paulo until 2019) and southern-hemisphere DST.
var stableZones = []string{
	"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata",
	"America/Sao_Paulo", "Pacific/Auckland", "Europe/London", "America/St_Johns",
	"Asia/Kathmandu", "Pacific/Chatham", "Australia/Sydney", "America/Los_Angeles", "Asia/Tokyo",
}

var (
	rangeStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	rangeEnd   = time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC)
)

// transitions lists the instants a zone changes offset between 2000 and 2035.
func transitions(loc *time.Location) []time.Time {
	var out []time.Time
	for t := rangeStart; t.Before(rangeEnd); {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() || !end.Before(rangeEnd) {
			break
		}
		out = append(out, end)
		t = end
	}
	return out
}

// randInstant is a random instant between 2000 and 2035 in microseconds, biased toward
// DST transitions, local month ends and whole minutes.
func randInstant(rng *rand.Rand, loc *time.Location, trans []time.Time) time.Time {
	var t time.Time
	switch k := rng.IntN(10); {
	case k < 4 && len(trans) > 0: // around a transition
		t = trans[rng.IntN(len(trans))].Add(time.Duration(rng.IntN(6*3600)-3*3600) * time.Second)
	case k < 6: // around the end of a local month
		y, m := 2000+rng.IntN(35), time.Month(1+rng.IntN(12))
		t = time.Date(y, m+1, 1, 0, 0, 0, 0, loc).Add(time.Duration(rng.IntN(4*3600)-2*3600) * time.Second)
	default:
		t = rangeStart.Add(time.Duration(rng.Int64N(int64(rangeEnd.Sub(rangeStart)/time.Second))) * time.Second)
	}
	switch rng.IntN(4) {
	case 0: // on a whole minute (the common case: the previous tick)
		return t.Truncate(time.Minute)
	case 1:
		return t.Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
	case 2:
		return t.Truncate(time.Minute).Add(-time.Microsecond)
	}
	return t
}

func mustLoad(name string) *time.Location {
	loc, err := cron.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprint(name, err))
	}
	return loc
}
