package api

import "errors"

// Why an AllocateDevice event fails, matched with errors.Is; the device
// plugin server maps them to the gRPC code kubelet sees.
var (
	// ErrInvalidRequest: a request kubelet should never send (empty,
	// unknown, repeated or too many device IDs, another resource).
	ErrInvalidRequest = errors.New("invalid device request")
	// ErrDeviceInUse: device IDs another allocation holds.
	ErrDeviceInUse = errors.New("device already allocated")
)
