// Package api is the vswitch plugin's Go API: whether the vswitch the
// agent programs answers. The device manager consumes it to report its
// devices unhealthy, to kubelet and the scheduler, while the vswitch does
// not answer; it imports no other part of the vswitch plugin.
package api
