// Package devicehealth turns the vswitch's reachability
// (plugins/vswitch/api) into the health of the device manager's devices,
// which kubelet's device plugin and the DRA driver advertise: a memif is
// of no use without the vswitch on its other side, so while the vswitch
// the agent programs has been unreachable for longer than a grace period,
// every device is unhealthy, and the scheduler places no new memif pod on
// the node. The grace lets a VPP restart, or a short stall, pass without
// a flap. Pods already running are not touched. An agent that programs no
// vswitch has nothing to wait for: its devices stay healthy.
//
// It owns the health value and the goroutine that keeps it (Watcher.Run,
// stopped by its context); it imports no plugin framework and no part of
// the vswitch plugin but its api package.
//
//	watcher := devicehealth.New(vswitch, 10*time.Second, log)
//	go watcher.Run(ctx)
//	health, changed := watcher.DeviceHealth()
package devicehealth
