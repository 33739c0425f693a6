package cron

import (
	"math/bits"
	"time"
)

// Wall-clock times are "naive" Unix seconds: the local date and time read as if UTC.

const (
	minute = 60
	day    = 86400
	// probe is how far from a wall time its instants can be (UTC offsets stay within
	// ±16 hours); the offsets in effect probe before and after it bracket any transition
	// that matters.
	probe = 16 * 3600
	// maxAttempts bounds the retries of a wall time whose instant is not after the
	// start, which only a zone with two transitions within 32 hours can cause.
	maxAttempts = 2000
)

// Next returns the first tick strictly after after, computed in loc (nil = UTC), in UTC.
// Every Spec that Parse returns fires, so Next always returns a tick (a zero Spec, which
// Parse never returns, gives the zero Time).
func (s *Spec) Next(after time.Time, loc *time.Location) time.Time {
	if s == nil || s.minute == 0 || s.hour == 0 || s.dom == 0 || s.month == 0 || s.dow == 0 {
		return time.Time{}
	}
	if loc == nil {
		loc = time.UTC
	}
	z := zone{loc}
	a := after.Unix() // floor: a tick is after `after` iff it is after a
	oc := z.offset(a)
	w0 := floorDiv(a+oc, minute)*minute + minute
	// During the second pass of a fall-back overlap, the repeated wall times already
	// fired (first occurrence); the search starts where the overlap ends.
	if op := z.offset(a - probe); op > oc && z.offset(a+oc-op) == op {
		t := z.transition(a+oc-op, a, op)
		if e := ceilDiv(t+op, minute) * minute; e > w0 {
			w0 = e
		}
	}
	for range maxAttempts { // one pass unless the zone breaks the one-transition-per-32h assumption
		w, ok := s.nextWall(w0)
		if !ok {
			break
		}
		if t := z.resolve(w); t > a {
			return time.Unix(t, 0).UTC()
		}
		w0 = w + minute
	}
	return time.Time{}
}

// nextWall returns the first matching wall time >= w (a multiple of 60).
func (s *Spec) nextWall(w int64) (int64, bool) {
	days := floorDiv(w, day)
	secs := w - days*day
	y, mo, d := civil(days)
	h, mi := int(secs/3600), int(secs%3600/60)
	stopYear := y + 500 // unreachable: a parsed spec fires at least every 40 years or so
	for y < stopYear {
		if s.month>>mo&1 == 0 {
			next := s.month >> (mo + 1) << (mo + 1)
			if next == 0 {
				y++
				next = s.month
			}
			mo, d, h, mi = bits.TrailingZeros64(next), 1, 0, 0
		}
		cand := s.days(y, mo) >> d << d
		if cand == 0 {
			mo, d, h, mi = mo+1, 1, 0, 0
			if mo > 12 {
				y, mo = y+1, 1
			}
			continue
		}
		if nd := bits.TrailingZeros64(cand); nd > d {
			d, h, mi = nd, 0, 0
		}
		hs := s.hour >> h << h
		if hs == 0 {
			d, h, mi = d+1, 0, 0
			continue
		}
		if nh := bits.TrailingZeros64(hs); nh > h {
			h, mi = nh, 0
		}
		ms := s.minute >> mi << mi
		if ms == 0 {
			h, mi = h+1, 0
			if h > 23 {
				d, h = d+1, 0
			}
			continue
		}
		mi = bits.TrailingZeros64(ms)
		return daysFromCivil(y, mo, d)*day + int64(h)*3600 + int64(mi)*minute, true
	}
	return 0, false
}

// days returns the matching days of month mo of year y as bits 1-31.
func (s *Spec) days(y int64, mo int) uint64 {
	first := daysFromCivil(y, mo, 1)
	wd := int(floorMod(first+4, 7))         // weekday of the 1st; 1970-01-01 was a Thursday
	p := (s.dow>>wd | s.dow<<(7-wd)) & 0x7f // bit j: day 1+j has a matching weekday
	week := (p | p<<7 | p<<14 | p<<21 | p<<28) << 1
	var m uint64
	if s.dayAnd {
		m = s.dom & week
	} else {
		m = s.dom | week
	}
	return m & (uint64(1)<<(monthLen(y, mo)+1) - 2)
}

type zone struct{ loc *time.Location }

// offset returns the UTC offset in seconds in effect at instant t.
func (z zone) offset(t int64) int64 {
	if z.loc == time.UTC {
		return 0
	}
	_, off := time.Unix(t, 0).In(z.loc).Zone()
	return int64(off)
}

// resolve maps wall time w to the instant it fires at (see the package doc).
func (z zone) resolve(w int64) int64 {
	oa, ob := z.offset(w-probe), z.offset(w+probe)
	if oa == ob {
		return w - oa
	}
	ca, cb := w-oa, w-ob
	va, vb := z.offset(ca) == oa, z.offset(cb) == ob
	switch {
	case va && vb: // repeated: the first occurrence
		return min(ca, cb)
	case va:
		return ca
	case vb:
		return cb
	}
	// Skipped by a gap (oa < ob): the transition, which lies in (cb, ca].
	return z.transition(cb, ca, oa)
}

// transition returns the first instant in (lo, hi] whose offset is not off, given that
// lo has offset off and hi has not.
func (z zone) transition(lo, hi, off int64) int64 {
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if z.offset(mid) == off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func monthLen(y int64, m int) int {
	if m == 2 && isLeap(y) {
		return 29
	}
	return [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m]
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian date
// (Howard Hinnant's algorithm).
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civil is the inverse of daysFromCivil.
func civil(days int64) (y int64, m, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int((mp+2)%12 + 1)
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}
