// Package validate collects the problems of a configuration, so that a bad config is
// reported with all its problems at once rather than one per attempt.
package validate

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Problems is a list of configuration problems. The zero value is empty and ready.
type Problems struct {
	errs []error
}

// Check records the problem described by format and args unless ok.
func (p *Problems) Check(ok bool, format string, args ...any) {
	if !ok {
		p.errs = append(p.errs, fmt.Errorf(format, args...))
	}
}

// Add records err unless it is nil.
func (p *Problems) Add(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

// Err joins the recorded problems (errors.Join), nil when there are none.
func (p *Problems) Err() error {
	return errors.Join(p.errs...)
}

// Token returns an API token without its surrounding whitespace (a secret file's
// trailing newline; requests are compared trimmed too), or an error when what is left
// cannot be a bearer token: empty although something was given, or holding whitespace
// or control characters, which no Authorization header carries intact. The error never
// repeats the token.
func Token(raw string) (string, error) {
	token := strings.TrimSpace(raw)
	switch {
	case token == "" && raw != "":
		return "", errors.New("the API token is only whitespace")
	case strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return "", errors.New("the API token holds whitespace or a control character; a bearer token is one word")
	}
	return token, nil
}
