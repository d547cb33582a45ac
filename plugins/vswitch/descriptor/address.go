package descriptor

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// toVPPPrefix encodes an address with its prefix length, e.g. 10.10.1.1/24.
func toVPPPrefix(address string) (vppmsg.AddressWithPrefix, error) {
	prefix, err := netip.ParsePrefix(address)
	if err != nil {
		return vppmsg.AddressWithPrefix{}, fmt.Errorf("IP address %q: want an address with prefix length such as 10.10.1.1/24: %w", address, err)
	}
	var vpp vppmsg.AddressWithPrefix
	vpp.Len = uint8(prefix.Bits())
	if prefix.Addr().Is4() {
		vpp.Address.Af = vppmsg.AddressIP4
		ip4 := prefix.Addr().As4()
		copy(vpp.Address.Un[:], ip4[:])
	} else {
		vpp.Address.Af = vppmsg.AddressIP6
		ip6 := prefix.Addr().As16()
		copy(vpp.Address.Un[:], ip6[:])
	}
	return vpp, nil
}

func fromVPPPrefix(vpp vppmsg.AddressWithPrefix) string {
	addr := netip.AddrFrom16(vpp.Address.Un)
	if vpp.Address.Af == vppmsg.AddressIP4 {
		addr = netip.AddrFrom4([4]byte(vpp.Address.Un[:4]))
	}
	return netip.PrefixFrom(addr, int(vpp.Len)).String()
}

// setAddresses adds addresses to an interface.
func setAddresses(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, addresses []string) error {
	for _, address := range addresses {
		prefix, err := toVPPPrefix(address)
		if err != nil {
			return err
		}
		if err := request(ctx, conn, &vppmsg.SwInterfaceAddDelAddress{SwIfIndex: index, IsAdd: true, Prefix: prefix}, &vppmsg.SwInterfaceAddDelAddressReply{}); err != nil {
			return fmt.Errorf("add address %s: %w", address, err)
		}
	}
	return nil
}

// readAddresses returns an interface's IPv4 and IPv6 addresses; when they
// are the addresses of want, in want's order and spelling.
func readAddresses(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, want []string) ([]string, error) {
	var addresses []string
	for _, ipv6 := range []bool{false, true} {
		details, err := vppapi.Dump[vppmsg.IPAddressDetails](ctx, conn, &vppmsg.IPAddressDump{SwIfIndex: index, IsIPv6: ipv6})
		if err != nil {
			return nil, fmt.Errorf("dump VPP addresses: %w", err)
		}
		for _, d := range details {
			addresses = append(addresses, fromVPPPrefix(d.Prefix))
		}
	}
	normalized := make([]string, 0, len(want))
	for _, address := range want {
		if prefix, err := netip.ParsePrefix(address); err == nil {
			normalized = append(normalized, prefix.String())
		}
	}
	if len(normalized) == len(addresses) && len(want) == len(addresses) &&
		slices.Equal(slices.Sorted(slices.Values(normalized)), slices.Sorted(slices.Values(addresses))) {
		return want, nil
	}
	return addresses, nil
}
