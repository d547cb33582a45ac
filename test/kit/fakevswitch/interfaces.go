package fakevswitch

import (
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"
)

// InterfaceDescriptor is callbacks, a KV descriptor that gives its Name
// and the operations (Create, Delete, Retrieve, ...), completed as the
// descriptor of VPP's interfaces model: registered with the KV scheduler
// in place of VPP's, it is told what VPP would be told of the interfaces.
func InterfaceDescriptor(callbacks kvs.KVDescriptor) *kvs.KVDescriptor {
	model := vpp_interfaces.ModelInterface
	callbacks.NBKeyPrefix = model.KeyPrefix()
	callbacks.ValueTypeName = model.ProtoName()
	callbacks.KeySelector = model.IsKeyValid
	callbacks.KeyLabel = model.StripKeyPrefix
	return &callbacks
}
