package memifspec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/contivpp/memif-agent/plugins/networks/ipam"
)

// Reason is why a memif spec is refused; each is a metric label.
type Reason string

// The reasons.
const (
	ReasonMalformed            Reason = "malformed"
	ReasonDuplicateMemif       Reason = "duplicate-memif"
	ReasonUnknownNetwork       Reason = "unknown-network"
	ReasonModeNotCarried       Reason = "mode-not-carried"
	ReasonTooManyQueues        Reason = "too-many-queues"
	ReasonBadRingSize          Reason = "bad-ring-size"
	ReasonBadBufferSize        Reason = "bad-buffer-size"
	ReasonBadMTU               Reason = "bad-mtu"
	ReasonBadMAC               Reason = "bad-mac"
	ReasonTooManyAddresses     Reason = "too-many-addresses"
	ReasonAddressOutsideSubnet Reason = "address-outside-subnet"
	ReasonAddressReserved      Reason = "address-reserved"
	ReasonAddressTaken         Reason = "address-taken"
	ReasonSubnetExhausted      Reason = "subnet-exhausted"
	// ReasonOther is an error that is none of the above.
	ReasonOther Reason = "other"
)

// Reasons lists every reason, for a metric's labels.
func Reasons() []Reason {
	return []Reason{ReasonMalformed, ReasonDuplicateMemif, ReasonUnknownNetwork, ReasonModeNotCarried,
		ReasonTooManyQueues, ReasonBadRingSize, ReasonBadBufferSize, ReasonBadMTU, ReasonBadMAC,
		ReasonTooManyAddresses, ReasonAddressOutsideSubnet, ReasonAddressReserved, ReasonAddressTaken,
		ReasonSubnetExhausted, ReasonOther}
}

// Error is a refused memif spec.
type Error struct {
	Reason Reason
	// Entry is the spec's place in the annotation's list, from 1; 0 when
	// it is not from a list.
	Entry int
	// Field is the spec's JSON field at fault; empty for the whole spec.
	Field string
	// Detail says what is wrong and what is wanted.
	Detail string
	// Err is the error behind Detail, if any.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var where []string
	if e.Entry > 0 {
		where = append(where, fmt.Sprintf("entry %d", e.Entry))
	}
	if e.Field != "" {
		where = append(where, fmt.Sprintf("field %q", e.Field))
	}
	prefix := "memif spec"
	if len(where) > 0 {
		prefix += " " + strings.Join(where, ", ")
	}
	return fmt.Sprintf("%s: %s (%s)", prefix, e.Detail, e.Reason)
}

// Unwrap returns the error behind the refusal.
func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the reason err refuses a memif for: an *Error's, the
// reason of an ipam error, else ReasonOther.
func ReasonOf(err error) Reason {
	var specErr *Error
	switch {
	case errors.As(err, &specErr):
		return specErr.Reason
	case errors.Is(err, ipam.ErrExhausted):
		return ReasonSubnetExhausted
	case errors.Is(err, ipam.ErrTaken), errors.Is(err, ipam.ErrOwnerHolds):
		return ReasonAddressTaken
	case errors.Is(err, ipam.ErrOutsideSubnet), errors.Is(err, ipam.ErrOutsideShare):
		return ReasonAddressOutsideSubnet
	case errors.Is(err, ipam.ErrReserved):
		return ReasonAddressReserved
	}
	return ReasonOther
}

func refuse(reason Reason, field, format string, args ...any) *Error {
	return &Error{Reason: reason, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// maxQuoted bounds how much of the input a message repeats.
const maxQuoted = 48

// quoted quotes s for a message, cut to maxQuoted bytes.
func quoted(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", strings.ToValidUTF8(s[:maxQuoted], ""), len(s))
}
