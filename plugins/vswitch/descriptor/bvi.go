package descriptor

import (
	"fmt"

	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// validateBVI allows a bridge domain one BVI (bridged virtual interface:
// the bridge domain's own port into routing, a loopback with the
// addresses, such as what routes a network across nodes' VXLAN tunnels
// in the network's VRF), in no split-horizon group.
func validateBVI(bd *vpp_l2.BridgeDomain) error {
	var bvi string
	for _, iface := range bd.Interfaces {
		switch {
		case !iface.BridgedVirtualInterface:
		case bvi != "":
			return fmt.Errorf("bridge domain %s: BVIs %s and %s; VPP gives a bridge domain one", bd.Name, bvi, iface.Name)
		case iface.SplitHorizonGroup != 0:
			return fmt.Errorf("bridge domain %s: BVI %s in split-horizon group %d; a BVI is in none", bd.Name, iface.Name, iface.SplitHorizonGroup)
		default:
			bvi = iface.Name
		}
	}
	return nil
}

// portType is how an interface joins its bridge domain.
func portType(iface *vpp_l2.BridgeDomain_Interface) vppmsg.L2PortType {
	if iface.BridgedVirtualInterface {
		return vppmsg.L2APIPortTypeBvi
	}
	return vppmsg.L2APIPortTypeNormal
}
