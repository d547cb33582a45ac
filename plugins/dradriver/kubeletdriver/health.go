package kubeletdriver

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
)

// VswitchUnreachableTaint is the key of the taint the node's devices get
// in its ResourceSlice while the vswitch has been unreachable for longer
// than devicemanager.conf's vswitch-health-grace. Its effect is
// NoSchedule: the scheduler allocates no tainted device to a new claim
// (unless the claim tolerates the taint), and claims already allocated,
// and their running pods, are left alone. Withdrawing the devices from the
// slice would keep new claims off too, but would also hide what the node
// has and why it offers nothing; kubelet's DRA health service
// (WatchHealthStatus) reaches only the pods' status, not the scheduler.
const VswitchUnreachableTaint = claims.DefaultDriverName + "/vswitch-unreachable"

// healthNow is the devices' health, always healthy without a source.
func (d *Driver) healthNow() (dmapi.DeviceHealth, <-chan struct{}) {
	if d.cfg.Health == nil {
		return dmapi.DeviceHealth{Healthy: true}, nil
	}
	return d.cfg.Health.DeviceHealth()
}

// taint returns devices tainted as health says, or as they are.
func taint(devices []resourceapi.Device, health dmapi.DeviceHealth) []resourceapi.Device {
	if health.Healthy {
		return devices
	}
	added := metav1.NewTime(health.Since)
	for i := range devices {
		devices[i].Taints = append(devices[i].Taints, resourceapi.DeviceTaint{
			Key: VswitchUnreachableTaint, Value: "true", Effect: resourceapi.DeviceTaintEffectNoSchedule, TimeAdded: &added,
		})
	}
	return devices
}

// resources is the node's one pool, its devices tainted while unhealthy.
func (d *Driver) resources(health dmapi.DeviceHealth) resourceslice.DriverResources {
	var pool resourceslice.Pool
	for _, devices := range claims.SliceDevices(d.cfg.Devices, d.cfg.SocketRoot, d.cfg.ContainerDir) {
		pool.Slices = append(pool.Slices, resourceslice.Slice{Devices: taint(devices, health)})
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{claims.PoolName(d.cfg.NodeName): pool}}
}

// followHealth publishes the pool again, tainted or not, each time the
// devices' health changes, until ctx ends.
func (d *Driver) followHealth(ctx context.Context, helper *kubeletplugin.Helper, published dmapi.DeviceHealth, changed <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		var health dmapi.DeviceHealth
		health, changed = d.healthNow()
		if health.Healthy == published.Healthy {
			continue
		}
		if err := helper.PublishResources(ctx, d.resources(health)); err != nil {
			d.log.WarnS("DRA driver's devices not published with their health", "driver", d.cfg.DriverName, "node", d.cfg.NodeName, "healthy", health.Healthy, "err", err)
			continue
		}
		published = health
		if health.Healthy {
			d.log.InfoS("DRA driver's devices schedulable again: taint removed", "driver", d.cfg.DriverName, "node", d.cfg.NodeName, "taint", VswitchUnreachableTaint)
		} else {
			d.log.WarnS("DRA driver's devices tainted NoSchedule", "driver", d.cfg.DriverName, "node", d.cfg.NodeName, "taint", VswitchUnreachableTaint, "reason", health.Reason)
		}
	}
}
