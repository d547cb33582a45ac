// Package api is the Go API of the device manager: the AllocateDevice event
// that kubelet's Allocate becomes, the memif information of an allocation,
// the interface sibling plugins use to read it (DeviceManagerAPI), and the
// one the DRA driver prepares its ResourceClaims through (ClaimPreparer).
//
// The package owns types only. The device manager plugin implements
// DeviceManagerAPI and ClaimPreparer; their methods are safe to call from
// any goroutine.
package api
