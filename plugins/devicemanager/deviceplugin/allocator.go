package deviceplugin

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
)

// Allocator makes the allocations kubelet's Allocate asks for; the device
// manager implements it. The server only checks and translates kubelet's
// calls: how devices become an allocation, and what holds it, is the
// Allocator's. Its methods are safe from any goroutine.
type Allocator interface {
	// Allocate makes one allocation holding deviceIDs, for one container
	// request of kubelet's call, and returns what the container gets. ctx
	// is kubelet's call. An error holds nothing for the call: when ctx
	// ends before the allocation is answered, the Allocator releases it
	// itself once made. An error made with WithCode says which gRPC code
	// kubelet sees; context errors are Canceled or DeadlineExceeded, any
	// other is Internal.
	Allocate(ctx context.Context, deviceIDs []string) (Answer, error)
	// Abandon releases allocations Allocate answered but the server never
	// handed to kubelet (a later container request of the same call
	// failed), all in one go; reason says why, for the log. It must not
	// block.
	Abandon(allocationIDs []string, reason string)
}

// Answer is what one container gets for its devices: kubelet's
// ContainerAllocateResponse, and the allocation it came from.
type Answer struct {
	// AllocationID names the allocation, for Abandon.
	AllocationID string
	// Envs and Annotations are the container's; they carry secrets.
	Envs        map[string]string
	Annotations map[string]string
	Mounts      []Mount
}

// Mount is a host directory mounted into the container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// WithCode marks err as one kubelet sees with code, such as
// InvalidArgument for a request no allocation can grant or Unavailable
// for one the Allocator cannot take now.
func WithCode(code codes.Code, err error) error { return &codedError{code: code, err: err} }

type codedError struct {
	code codes.Code
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// Observer hears what the server did, for metrics and readiness. Its
// methods are called from the server's goroutines and must not block.
type Observer interface {
	// Registered: a registration with kubelet succeeded; again is false
	// for the first one.
	Registered(again bool)
	// RegistrationFailed: a registration attempt failed.
	RegistrationFailed(err error)
	// Answered: kubelet's Allocate call was answered after latency, err
	// nil on success. Calls forwarded to a successor are not counted.
	Answered(latency time.Duration, err error)
}

// ignored is the Observer of a server given none.
type ignored struct{}

func (ignored) Registered(bool)               {}
func (ignored) RegistrationFailed(error)      {}
func (ignored) Answered(time.Duration, error) {}

// Code is the gRPC code kubelet sees for an Allocator's error.
func Code(err error) codes.Code {
	var coded *codedError
	switch {
	case errors.As(err, &coded):
		return coded.code
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Internal
}
