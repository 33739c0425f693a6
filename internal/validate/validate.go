// Package validate collects the problems of a configuration, so that a bad config is
// reported with all its problems at once rather than one per attempt.
package validate

import (
	"errors"
	"fmt"
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
