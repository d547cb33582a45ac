package descriptor

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// updateWithRecreate: VPP changes the admin state, MTU, MAC address,
// addresses and unnumbered of an interface in place (the rx modes are a
// value of their own). Everything
// else re-creates it: the type and the memif link (role, mode, ID, socket,
// secret, queues, ring and buffer size are fixed at memif_create), and the
// VRF (VPP moves an interface to another table only while it has no
// address).
func updateWithRecreate(_ string, oldIface, iface *vpp_interfaces.Interface, _ *InterfaceMetadata) bool {
	return !proto.Equal(fixedPart(oldIface), fixedPart(iface))
}

// sameInterface compares all but the rx modes, which the RxModes
// descriptor compares and applies.
func sameInterface(_ string, a, b *vpp_interfaces.Interface) bool {
	return proto.Equal(withoutRxModes(a), withoutRxModes(b))
}

func withoutRxModes(iface *vpp_interfaces.Interface) *vpp_interfaces.Interface {
	if len(iface.GetRxModes()) == 0 {
		return iface
	}
	iface = proto.Clone(iface).(*vpp_interfaces.Interface)
	iface.RxModes = nil
	return iface
}

func fixedPart(value *vpp_interfaces.Interface) *vpp_interfaces.Interface {
	iface := proto.Clone(value).(*vpp_interfaces.Interface)
	iface.Enabled, iface.Mtu, iface.PhysAddress = false, 0, ""
	iface.IpAddresses, iface.Unnumbered, iface.RxModes = nil, nil, nil
	return iface
}

func (d *Interfaces) update(_ string, oldIface, iface *vpp_interfaces.Interface, metadata *InterfaceMetadata) (*InterfaceMetadata, error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("update interface %s: %w", iface.Name, err)
	}
	ctx := context.Background()
	meta, err := d.current(ctx, conn, iface.Name, metadata)
	if err == nil && meta == nil {
		err = fmt.Errorf("VPP has no interface tagged %s", owner.Tag(iface.Name))
	}
	if err == nil {
		err = d.change(ctx, conn, meta.Index, oldIface, iface)
	}
	if err != nil {
		return nil, fmt.Errorf("update interface %s: %w", iface.Name, err)
	}
	return meta, nil
}

// change applies what differs between old and iface in place, in the
// order: addresses, unnumbered, MAC, MTU, admin state. The rx modes are a
// value of their own (RxModes).
func (d *Interfaces) change(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, old, iface *vpp_interfaces.Interface) error {
	if err := changeAddresses(ctx, conn, index, old.IpAddresses, iface.IpAddresses); err != nil {
		return err
	}
	oldTarget, newTarget := old.GetUnnumbered().GetInterfaceWithIp(), iface.GetUnnumbered().GetInterfaceWithIp()
	if oldTarget != newTarget {
		if err := d.setUnnumbered(ctx, conn, index, oldTarget, false); err != nil {
			return err
		}
		if err := d.setUnnumbered(ctx, conn, index, newTarget, true); err != nil {
			return err
		}
	}
	if iface.PhysAddress != old.PhysAddress && iface.PhysAddress != "" {
		mac, _ := parseMAC(iface.PhysAddress)
		if err := request(ctx, conn, &vppmsg.SwInterfaceSetMACAddress{SwIfIndex: index, MACAddress: mac}, &vppmsg.SwInterfaceSetMACAddressReply{}); err != nil {
			return fmt.Errorf("set MAC address %s: %w", iface.PhysAddress, err)
		}
	}
	if err := setMTU(ctx, conn, index, iface); err != nil {
		return err
	}
	return setAdminState(ctx, conn, index, iface.Enabled)
}

// changeAddresses removes the addresses of old that want lacks, then adds
// those it adds.
func changeAddresses(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, old, want []string) error {
	canonical := func(addresses []string) map[string]string {
		set := make(map[string]string, len(addresses))
		for _, address := range addresses {
			if prefix, err := netip.ParsePrefix(address); err == nil {
				set[prefix.String()] = address
			}
		}
		return set
	}
	oldSet, wantSet := canonical(old), canonical(want)
	for key, address := range oldSet {
		if _, kept := wantSet[key]; kept {
			continue
		}
		prefix, _ := toVPPPrefix(address)
		if err := request(ctx, conn, &vppmsg.SwInterfaceAddDelAddress{SwIfIndex: index, Prefix: prefix}, &vppmsg.SwInterfaceAddDelAddressReply{}); err != nil {
			return fmt.Errorf("remove address %s: %w", address, err)
		}
	}
	var added []string
	for key, address := range wantSet {
		if _, had := oldSet[key]; !had {
			added = append(added, address)
		}
	}
	return setAddresses(ctx, conn, index, added)
}
