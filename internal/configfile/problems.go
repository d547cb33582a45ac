package configfile

import "fmt"

// Problems gathers what a config's Validate finds wrong, one *KeyError per
// finding, so that every config reports all of its bad keys at once and in
// the same words ("config key "k": must be ..., got ...").
type Problems struct {
	errs []error
}

// Check records reason against key unless reason is empty.
func (p *Problems) Check(key, reason string) {
	if reason != "" {
		p.errs = append(p.errs, &KeyError{Key: key, Reason: reason})
	}
}

// Addf records the formatted reason against key.
func (p *Problems) Addf(key, format string, args ...any) {
	p.Check(key, fmt.Sprintf(format, args...))
}

// CheckPositive records a problem with key unless d is above zero; example
// is a valid value for the message, such as "30s".
func (p *Problems) CheckPositive(key string, d Duration, example string) {
	if d <= 0 {
		p.Addf(key, "must be a positive duration such as %q, got %s", example, d)
	}
}

// Err returns the recorded problems joined (at most 20 listed), or nil.
func (p *Problems) Err() error { return joinBounded(p.errs) }
