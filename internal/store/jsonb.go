package store

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// PostgreSQL's jsonb is stricter than JSON: it rejects "\u0000", unpaired UTF-16
// surrogate escapes and numbers beyond its numeric type, with an error that is not
// ErrInvalid and arrives after validation passed. CheckStorableJSON finds those in a
// valid JSON text up front, so bad input gets a clear error everywhere, and the memory
// store and PostgreSQL accept exactly the same payloads.
//
// The numeric limits are PostgreSQL's (numeric.c): at most 16383 digits after the
// decimal point once the exponent is applied (NUMERIC_DSCALE_MAX), at most 131072 before
// it, and an exponent below INT_MAX/2 in magnitude.
const (
	pgMaxScaleDigits  = 16383
	pgMaxWeightDigits = 131072
	pgMaxExponent     = 1 << 30 // a little under INT_MAX/2: whatever is above is rejected
)

// CheckStorableJSON reports why valid JSON b cannot be stored as jsonb, or nil.
// CreateParams.Normalize calls it.
func CheckStorableJSON(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("must be valid UTF-8")
	}
	for i := 0; i < len(b); {
		var n int
		var err error
		switch c := b[i]; {
		case c == '"':
			n, err = checkJSONString(b[i:])
		case c == '-' || (c >= '0' && c <= '9'):
			n, err = checkJSONNumber(b[i:])
		default:
			n = 1
		}
		if err != nil {
			return err
		}
		i += n
	}
	return nil
}

// checkJSONString checks the string starting at b[0] == '"' and returns its length.
func checkJSONString(b []byte) (int, error) {
	for j := 1; j < len(b); {
		switch b[j] {
		case '"':
			return j + 1, nil
		case '\\':
			if b[j+1] != 'u' {
				j += 2
				continue
			}
			r := hex4(b[j+2 : j+6])
			j += 6
			switch {
			case r == 0:
				return 0, errors.New(`must not contain \u0000 (PostgreSQL cannot store it)`)
			case r >= 0xDC00 && r <= 0xDFFF:
				return 0, fmt.Errorf(`contains an unpaired surrogate escape \u%04x`, r)
			case r >= 0xD800 && r < 0xDC00:
				if j+6 > len(b) || b[j] != '\\' || b[j+1] != 'u' {
					return 0, fmt.Errorf(`contains an unpaired surrogate escape \u%04x`, r)
				}
				if lo := hex4(b[j+2 : j+6]); lo < 0xDC00 || lo > 0xDFFF {
					return 0, fmt.Errorf(`contains an unpaired surrogate escape \u%04x`, r)
				}
				j += 6
			}
		default:
			j++
		}
	}
	return len(b), nil // unreachable for valid JSON
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		}
	}
	return r
}

// checkJSONNumber checks the number starting at b[0] and returns its length.
func checkJSONNumber(b []byte) (int, error) {
	j := 0
	if b[j] == '-' {
		j++
	}
	digits := func() (start, end int) {
		start = j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return start, j
	}
	is, ie := digits()
	var fs, fe int
	if j < len(b) && b[j] == '.' {
		j++
		fs, fe = digits()
	}
	var exp int64
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		neg := false
		if b[j] == '+' || b[j] == '-' {
			neg = b[j] == '-'
			j++
		}
		es, ee := digits()
		for _, c := range b[es:ee] {
			if exp = exp*10 + int64(c-'0'); exp > pgMaxExponent {
				return 0, fmt.Errorf("contains the number %s, beyond what PostgreSQL stores", abbreviate(b[:j]))
			}
		}
		if neg {
			exp = -exp
		}
	}
	num := b[:j]
	if scale := int64(fe-fs) - exp; scale > pgMaxScaleDigits {
		return 0, fmt.Errorf("contains the number %s with more than %d digits after the decimal point", abbreviate(num), pgMaxScaleDigits)
	}
	// Digits before the decimal point once the exponent is applied, counted from the
	// first significant digit (a zero has none).
	var weight int64
	intPart := bytes.TrimLeft(b[is:ie], "0")
	if len(intPart) > 0 {
		weight = int64(len(intPart)) + exp
	} else if k := bytes.IndexFunc(b[fs:fe], func(r rune) bool { return r != '0' }); k >= 0 {
		weight = exp - int64(k)
	}
	if weight > pgMaxWeightDigits {
		return 0, fmt.Errorf("contains the number %s with more than %d digits before the decimal point", abbreviate(num), pgMaxWeightDigits)
	}
	return j, nil
}

func abbreviate(b []byte) string {
	if len(b) > 24 {
		return string(b[:20]) + "..."
	}
	return string(b)
}
