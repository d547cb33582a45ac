// Package api is the Go API of the device manager: the AllocateDevice event
// that kubelet's Allocate becomes, the memif information of an allocation,
// and the interface sibling plugins use to read it (DeviceManagerAPI).
//
// The package owns types only. The device manager plugin implements
// DeviceManagerAPI; its methods are safe to call from any goroutine.
package api
