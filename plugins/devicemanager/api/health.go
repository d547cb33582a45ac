package api

import "time"

// DeviceHealth is the health of the device manager's devices. They are
// all alike and all hang on the one vswitch, so one value speaks for all.
type DeviceHealth struct {
	// Healthy is false while the vswitch has been unreachable for longer
	// than devicemanager.conf's vswitch-health-grace.
	Healthy bool
	// Reason says why the devices are unhealthy.
	Reason string
	// Since is when the devices became what Healthy says.
	Since time.Time
}

// DeviceHealthSource tells the devices' health to those who advertise
// them: kubelet's device plugin (ListAndWatch) and the DRA driver (the
// ResourceSlice). Its method is safe from any goroutine.
type DeviceHealthSource interface {
	// DeviceHealth returns the devices' health and a channel closed at its
	// next change.
	DeviceHealth() (DeviceHealth, <-chan struct{})
}
