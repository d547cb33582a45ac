package descriptor

import (
	"fmt"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// VPP's memif limits (src/plugins/memif/private.h, memif.api).
const (
	// MaxMemifQueues is the most rx or tx queues a memif has (a u8 in the
	// API).
	MaxMemifQueues = 255
	// MaxMemifRingSize is the largest ring, 2^14 entries; a ring size is a
	// power of two.
	MaxMemifRingSize = 1 << 14
	// MaxMemifBufferSize is the largest buffer (a u16 in the API).
	MaxMemifBufferSize = 1<<16 - 1
)

func validateInterface(_ string, iface *vpp_interfaces.Interface) error {
	if iface.Name == "" || len(iface.Name) > owner.MaxNameLength {
		return fmt.Errorf("interface name %q: want 1 to %d bytes (VPP's interface tag holds it after %q)", iface.Name, owner.MaxNameLength, owner.Prefix)
	}
	var err error
	switch {
	case iface.Type == vpp_interfaces.Interface_MEMIF && iface.GetMemif() != nil:
		err = validateMemifLink(iface.GetMemif())
	case iface.Type == vpp_interfaces.Interface_AF_PACKET && iface.GetAfpacket() != nil:
		err = validateHostInterface(iface)
	case iface.Type == vpp_interfaces.Interface_VXLAN_TUNNEL && iface.GetVxlan() != nil:
		err = validateVxlanTunnel(iface)
	case iface.Type == vpp_interfaces.Interface_SOFTWARE_LOOPBACK && iface.Link == nil:
		if len(iface.RxModes) > 0 {
			err = fmt.Errorf("a loopback has no rx queues: leave rx modes out")
		}
	default:
		err = fmt.Errorf("type %s: %w", iface.Type, errUnsupportedType)
	}
	if err == nil {
		err = validateL3(iface)
	}
	if err == nil {
		err = validateRxModes(iface.RxModes)
	}
	if err != nil {
		return fmt.Errorf("interface %s: %w", iface.Name, err)
	}
	return nil
}

func validateMemifLink(link *vpp_interfaces.MemifLink) error {
	switch {
	case link.SocketFilename == "" || len(link.SocketFilename) >= maxSocketFilename:
		return fmt.Errorf("socket filename %q: want 1 to %d bytes", link.SocketFilename, maxSocketFilename-1)
	case len(link.Secret) >= maxSecretLength:
		return fmt.Errorf("secret of %d bytes, VPP holds at most %d", len(link.Secret), maxSecretLength-1)
	case link.RxQueues > MaxMemifQueues || link.TxQueues > MaxMemifQueues:
		return fmt.Errorf("%d rx and %d tx queues: VPP allows at most %d each", link.RxQueues, link.TxQueues, MaxMemifQueues)
	case link.RingSize > MaxMemifRingSize || link.RingSize&(link.RingSize-1) != 0:
		return fmt.Errorf("ring size %d: want a power of two up to %d (0: VPP's 1024)", link.RingSize, MaxMemifRingSize)
	case link.BufferSize > MaxMemifBufferSize:
		return fmt.Errorf("buffer size %d: VPP holds at most %d", link.BufferSize, MaxMemifBufferSize)
	}
	return nil
}

// validateL3 checks the MAC, VRF, unnumbered and address fields, and
// refuses the fields the descriptor does not make.
func validateL3(iface *vpp_interfaces.Interface) error {
	switch {
	case iface.SetDhcpClient || len(iface.RxPlacements) > 0:
		return fmt.Errorf("DHCP and rx placement are not supported by this agent's VPP descriptor")
	case iface.PhysAddress != "" && isIPMemif(iface):
		return fmt.Errorf("MAC address %s on a memif in IP mode, which carries no Ethernet header: leave it out", iface.PhysAddress)
	case iface.Mtu > 1<<16-1:
		return fmt.Errorf("MTU %d: VPP holds at most %d", iface.Mtu, 1<<16-1)
	}
	if iface.PhysAddress != "" {
		if _, err := parseMAC(iface.PhysAddress); err != nil {
			return err
		}
	}
	if iface.Unnumbered != nil {
		switch target := iface.Unnumbered.InterfaceWithIp; {
		case target == "" || target == iface.Name:
			return fmt.Errorf("unnumbered to %q: want the name of another interface, one with addresses", target)
		case len(iface.IpAddresses) > 0:
			return fmt.Errorf("unnumbered to %s and addresses %v: an unnumbered interface borrows its addresses, leave them out", target, iface.IpAddresses)
		}
	}
	for _, address := range iface.IpAddresses {
		if _, err := toVPPPrefix(address); err != nil {
			return err
		}
	}
	return nil
}

func validateRxModes(modes []*vpp_interfaces.Interface_RxMode) error {
	for _, mode := range modes {
		switch mode.Mode {
		case vpp_interfaces.Interface_RxMode_POLLING, vpp_interfaces.Interface_RxMode_INTERRUPT,
			vpp_interfaces.Interface_RxMode_ADAPTIVE, vpp_interfaces.Interface_RxMode_DEFAULT:
		default:
			return fmt.Errorf("rx mode %s: want POLLING, INTERRUPT, ADAPTIVE or DEFAULT", mode.Mode)
		}
	}
	return nil
}
