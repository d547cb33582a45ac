package claims

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// Device attribute names in the ResourceSlice, for DeviceClass and request
// selectors ("device.attributes['memif.contivpp.io'].index").
const (
	AttributeIndex        = "index"
	AttributeSocketRoot   = "socketRoot"
	AttributeContainerDir = "containerDir"
)

// MaxDevicesPerSlice is the API server's limit of devices in one
// ResourceSlice.
const MaxDevicesPerSlice = 128

// SliceDevices returns the node's memif devices split into ResourceSlices
// of at most MaxDevicesPerSlice, in device order: the scheduler takes the
// first free one. Each device names its index, the host directory holding
// the socket directories and where a container sees its socket directory;
// nothing secret.
func SliceDevices(deviceIDs []string, socketRoot, containerDir string) [][]resourceapi.Device {
	var slices [][]resourceapi.Device
	for i, id := range deviceIDs {
		if i%MaxDevicesPerSlice == 0 {
			slices = append(slices, make([]resourceapi.Device, 0, min(MaxDevicesPerSlice, len(deviceIDs)-i)))
		}
		last := &slices[len(slices)-1]
		*last = append(*last, resourceapi.Device{
			Name: id,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				AttributeIndex:        {IntValue: ptr.To(int64(i))},
				AttributeSocketRoot:   {StringValue: ptr.To(socketRoot)},
				AttributeContainerDir: {StringValue: ptr.To(containerDir)},
			},
		})
	}
	return slices
}

// PoolName is the node's pool: one pool per node, named after it.
func PoolName(nodeName string) string { return nodeName }
