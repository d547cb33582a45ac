package allocation

import (
	"errors"
	"fmt"
	"strings"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
)

// ErrUnknownAllocation is returned for an allocation ID the state does not
// hold.
var ErrUnknownAllocation = errors.New("unknown allocation")

// RequestProblem says what is wrong with a device request.
type RequestProblem int

const (
	// EmptyRequest holds no device ID.
	EmptyRequest RequestProblem = iota
	// TooManyDevices asks for more devices than the node has.
	TooManyDevices
	// UnknownDevices are IDs that are not devices of the resource.
	UnknownDevices
	// DuplicateDevices appear more than once in the request.
	DuplicateDevices
	// DevicesInUse are held by another allocation.
	DevicesInUse
)

// RequestError is a refused device request.
type RequestError struct {
	Problem RequestProblem
	// DeviceIDs are the offending IDs (all requested IDs for TooManyDevices).
	DeviceIDs []string
	// Resource and DeviceCount describe the node's devices.
	Resource    string
	DeviceCount int
	// DeviceRange names the node's first and last device ("none").
	DeviceRange string
	// Holders are the allocations holding DevicesInUse IDs.
	Holders []string
}

// maxListedIDs bounds how many IDs an error message shows: a request may
// hold thousands.
const maxListedIDs = 8

// Error implements error.
func (e *RequestError) Error() string {
	switch e.Problem {
	case EmptyRequest:
		return fmt.Sprintf("device request for %s holds no device ID", e.Resource)
	case TooManyDevices:
		return fmt.Sprintf("device request for %s asks for %d devices, the node has %d", e.Resource, len(e.DeviceIDs), e.DeviceCount)
	case UnknownDevices:
		return fmt.Sprintf("device IDs %s are not devices of %s (the node has %d, %s)",
			listIDs(e.DeviceIDs), e.Resource, e.DeviceCount, e.DeviceRange)
	case DuplicateDevices:
		return fmt.Sprintf("device IDs %s appear more than once in one request for %s", listIDs(e.DeviceIDs), e.Resource)
	case DevicesInUse:
		return fmt.Sprintf("device IDs %s of %s are already held by allocation %s; kubelet and the device manager disagree until the holder is released",
			listIDs(e.DeviceIDs), e.Resource, listIDs(e.Holders))
	}
	return fmt.Sprintf("invalid device request for %s", e.Resource)
}

// Is makes errors.Is match dmapi.ErrDeviceInUse or dmapi.ErrInvalidRequest.
func (e *RequestError) Is(target error) bool {
	if e.Problem == DevicesInUse {
		return target == dmapi.ErrDeviceInUse
	}
	return target == dmapi.ErrInvalidRequest
}

func listIDs(ids []string) string {
	if len(ids) <= maxListedIDs {
		return "[" + strings.Join(ids, " ") + "]"
	}
	return fmt.Sprintf("[%s ... and %d more]", strings.Join(ids[:maxListedIDs], " "), len(ids)-maxListedIDs)
}
