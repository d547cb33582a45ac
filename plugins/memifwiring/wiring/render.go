package wiring

import (
	"net/netip"
	"slices"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/networks/assign"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Rendered is the vswitch side of one pod's memifs.
type Rendered struct {
	// Values are the memif interfaces and their routes by KV-scheduler
	// key.
	Values map[string]proto.Message
	// Members are the interface names of each l2 network's memifs (""
	// for the memifs in no network), and Gateways each l3 network's
	// gateway with the subnet's length.
	Members  map[string][]string
	Gateways map[string]netip.Prefix
	// Networks are what each allocation's memifs got, by allocation ID.
	Networks map[string][]dmapi.MemifNetwork
}

// Render returns the vswitch side of one pod's memifs. assignments are
// what each allocation's memifs got from the networks, by allocation ID:
// a memif in a network is rendered as its network says, a refused one
// not at all, and one in no network (or of an allocation without
// assignments) as config says.
func Render(pod podapi.PodID, memifs []dmapi.MemifInfo, assignments map[string][]assign.Assignment, config Config) Rendered {
	owners := ownerNames(memifs)
	r := Rendered{Values: map[string]proto.Message{}, Members: map[string][]string{},
		Gateways: map[string]netip.Prefix{}, Networks: map[string][]dmapi.MemifNetwork{}}
	for i, memif := range memifs {
		assigned := assignments[memif.AllocationID]
		for memifID := range memif.DeviceIDs {
			iface := renderInterface(interfaceName(pod, owners[i], memifID), memif, memifID, config)
			if memifID >= len(assigned) || !assigned[memifID].InNetwork() && assigned[memifID].Refused == nil {
				iface.IpAddresses = config.addressOf(pod.Namespace, pod.Name, memif.ContainerName, memifID)
				r.Values[vpp_interfaces.InterfaceKey(iface.Name)] = iface
				r.Networks[memif.AllocationID] = append(r.Networks[memif.AllocationID], legacyNetwork(memifID))
				r.Members[""] = append(r.Members[""], iface.Name)
				continue
			}
			assignment := assigned[memifID]
			r.Networks[memif.AllocationID] = append(r.Networks[memif.AllocationID], memifNetwork(assignment))
			if assignment.Refused != nil {
				continue
			}
			r.Values[vpp_interfaces.InterfaceKey(iface.Name)] = iface
			network := assignment.Memif.Network.Name
			if route := renderInNetwork(iface, assignment); route != nil {
				r.Values[routeKey(route)] = route
				r.Gateways[network] = gatewayOf(assignment)
			} else {
				r.Members[network] = append(r.Members[network], iface.Name)
			}
		}
	}
	return r
}

func renderInterface(name string, memif dmapi.MemifInfo, memifID int, config Config) *vpp_interfaces.Interface {
	iface := &vpp_interfaces.Interface{
		Name:    name,
		Type:    vpp_interfaces.Interface_MEMIF,
		Enabled: true,
		Mtu:     config.MTU,
		Vrf:     config.VRF,
		Link: &vpp_interfaces.Interface_Memif{Memif: &vpp_interfaces.MemifLink{
			Mode:           vpp_interfaces.MemifLink_ETHERNET,
			Master:         true,
			Id:             uint32(memifID),
			SocketFilename: memif.HostSocket,
			Secret:         memif.Secret,
		}},
	}
	if mode, ok := rxModes[config.RxMode]; ok {
		iface.RxModes = []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: mode}}
	}
	return iface
}

// RenderBridgeDomain returns the bridge domain named name holding the
// interfaces of keys, in name order: flooding, unknown-unicast flooding,
// forwarding and learning on, as a switch between the pods.
func RenderBridgeDomain(name string, keys []string) *vpp_l2.BridgeDomain {
	bd := &vpp_l2.BridgeDomain{Name: name, Flood: true, UnknownUnicastFlood: true, Forward: true, Learn: true}
	for _, key := range slices.Sorted(slices.Values(keys)) {
		bd.Interfaces = append(bd.Interfaces, &vpp_l2.BridgeDomain_Interface{Name: vpp_interfaces.ModelInterface.StripKeyPrefix(key)})
	}
	return bd
}

// RenderXConnects returns the L2 cross-connects of config's l2-xconnect
// pairs, both directions of each, keyed by their KV-scheduler keys; config
// must be valid. They name the interfaces Render gives those memifs, so
// each waits in the KV scheduler until both memifs exist, and goes before
// either is deleted. A container that holds more than one allocation has
// its interfaces named by allocation ID, so its memifs cannot be paired.
func RenderXConnects(config Config) map[string]proto.Message {
	values := make(map[string]proto.Message)
	for _, pair := range config.L2XConnect {
		a, _ := parseMemifRef(pair[0])
		b, _ := parseMemifRef(pair[1])
		for _, direction := range [][2]string{{a.interfaceName(), b.interfaceName()}, {b.interfaceName(), a.interfaceName()}} {
			values[vpp_l2.XConnectKey(direction[0])] = &vpp_l2.XConnectPair{ReceiveInterface: direction[0], TransmitInterface: direction[1]}
		}
	}
	return values
}

// ownerNames names each memif by its container, or by its allocation ID
// when the container is unknown or holds more than one allocation.
func ownerNames(memifs []dmapi.MemifInfo) []string {
	perContainer := map[string]int{}
	for _, memif := range memifs {
		perContainer[memif.ContainerName]++
	}
	owners := make([]string, len(memifs))
	for i, memif := range memifs {
		owners[i] = memif.ContainerName
		if memif.ContainerName == "" || perContainer[memif.ContainerName] > 1 {
			owners[i] = memif.AllocationID
		}
	}
	return owners
}
