package descriptor_test

import (
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

func prefixString(p vppmsg.Prefix) string {
	addr := netip.AddrFrom16(p.Address.Un)
	if p.Address.Af == vppmsg.AddressIP4 {
		addr = netip.AddrFrom4([4]byte(p.Address.Un[:4]))
	}
	return netip.PrefixFrom(addr, int(p.Len)).String()
}

// memif is the model of a memif master on socket in dir.
func memif(dir, name string, change func(*vpp_interfaces.Interface)) *vpp_interfaces.Interface {
	iface := &vpp_interfaces.Interface{
		Name: name, Type: vpp_interfaces.Interface_MEMIF, Enabled: true,
		Link: &vpp_interfaces.Interface_Memif{Memif: &vpp_interfaces.MemifLink{
			Master: true, SocketFilename: filepath.Join(dir, name+".sock"), Secret: "s3cret"}},
	}
	if change != nil {
		change(iface)
	}
	return iface
}

func loopback(name string, vrf uint32, addresses ...string) *vpp_interfaces.Interface {
	return &vpp_interfaces.Interface{Name: name, Type: vpp_interfaces.Interface_SOFTWARE_LOOPBACK, Enabled: true, Vrf: vrf, IpAddresses: addresses}
}

// vrf returns VRF id's IPv4 and IPv6 tables, keyed.
func vrf(id uint32, label string) map[string]proto.Message {
	values := map[string]proto.Message{}
	for _, protocol := range []vpp_l3.VrfTable_Protocol{vpp_l3.VrfTable_IPV4, vpp_l3.VrfTable_IPV6} {
		values[vpp_l3.VrfTableKey(id, protocol)] = &vpp_l3.VrfTable{Id: id, Protocol: protocol, Label: label}
	}
	return values
}

func merge(maps ...map[string]proto.Message) map[string]proto.Message {
	all := map[string]proto.Message{}
	for _, values := range maps {
		for key, value := range values {
			all[key] = value
		}
	}
	return all
}

func with(values map[string]proto.Message, ifaces ...*vpp_interfaces.Interface) map[string]proto.Message {
	all := merge(values)
	for _, iface := range ifaces {
		all[vpp_interfaces.InterfaceKey(iface.Name)] = iface
	}
	return all
}

func mac(t testing.TB, address vppmsg.MACAddress) string {
	t.Helper()
	return net.HardwareAddr(address[:]).String()
}

// fieldCase is one field of the memif spec: the memif made with it, what
// VPP must show, the change, whether VPP changes it in place, and what VPP
// must show then.
type fieldCase struct {
	name string
	// others are values the memif needs (VRF tables, loopbacks).
	others  map[string]proto.Message
	create  func(*vpp_interfaces.Interface)
	created func(t *testing.T, got *vppInterface)
	update  func(*vpp_interfaces.Interface)
	inPlace bool
	// apart: the change is of a value of its own (the rx modes), not of
	// the interface.
	apart   bool
	updated func(t *testing.T, got *vppInterface)
}

func wantMode(mode vppmsg.MemifMode) func(*testing.T, *vppInterface) {
	return func(t *testing.T, got *vppInterface) {
		if got.memif.Mode != mode {
			t.Errorf("memif mode %d, want %d", got.memif.Mode, mode)
		}
	}
}

func wantLinkMTU(mtu uint16) func(*testing.T, *vppInterface) {
	return func(t *testing.T, got *vppInterface) {
		if got.details.LinkMTU != mtu {
			t.Errorf("link MTU %d, want %d", got.details.LinkMTU, mtu)
		}
	}
}

func wantL3MTU(mtu uint32) func(*testing.T, *vppInterface) {
	return func(t *testing.T, got *vppInterface) {
		if got.details.MTU[0] != mtu {
			t.Errorf("L3 MTU %d, want %d", got.details.MTU[0], mtu)
		}
	}
}

func wantMAC(address string) func(*testing.T, *vppInterface) {
	return func(t *testing.T, got *vppInterface) {
		if m := mac(t, got.details.L2Address); m != address {
			t.Errorf("MAC %s, want %s", m, address)
		}
	}
}

func wantAdminUp(up bool) func(*testing.T, *vppInterface) {
	return func(t *testing.T, got *vppInterface) {
		if isUp := got.details.Flags&vppmsg.IfStatusAPIFlagAdminUp != 0; isUp != up {
			t.Errorf("admin up %v, want %v", isUp, up)
		}
	}
}

func wantAddresses(addresses ...string) func(*testing.T, *vppInterface) {
	return func(t *testing.T, got *vppInterface) {
		if !slices.Equal(slices.Sorted(slices.Values(got.addresses)), slices.Sorted(slices.Values(addresses))) {
			t.Errorf("addresses %v, want %v", got.addresses, addresses)
		}
	}
}

func wantUnnumbered(vrf uint32, to string) func(*testing.T, *vppInterface) {
	return func(t *testing.T, got *vppInterface) {
		if got.vrf != [2]uint32{vrf, vrf} || got.unnumberedTo != to {
			t.Errorf("IPv4/IPv6 tables %v, unnumbered to %q; want VRF %d, unnumbered to %q", got.vrf, got.unnumberedTo, vrf, to)
		}
	}
}

func noVPPCheck(*testing.T, *vppInterface) {}

func fieldCases() []fieldCase {
	return []fieldCase{
		{name: "ethernet mode, then IP mode",
			create: nil, created: wantMode(vppmsg.MemifModeAPIEthernet),
			update:  func(i *vpp_interfaces.Interface) { i.GetMemif().Mode = vpp_interfaces.MemifLink_IP },
			updated: wantMode(vppmsg.MemifModeAPIIP)},
		{name: "queues",
			create:  func(i *vpp_interfaces.Interface) { i.GetMemif().RxQueues, i.GetMemif().TxQueues = 2, 2 },
			created: noVPPCheck,
			update:  func(i *vpp_interfaces.Interface) { i.GetMemif().RxQueues, i.GetMemif().TxQueues = 4, 4 },
			updated: noVPPCheck},
		{name: "ring and buffer size",
			create:  func(i *vpp_interfaces.Interface) { i.GetMemif().RingSize, i.GetMemif().BufferSize = 2048, 4096 },
			created: noVPPCheck,
			update:  func(i *vpp_interfaces.Interface) { i.GetMemif().RingSize = 4096 },
			updated: noVPPCheck},
		{name: "MTU in ethernet mode",
			create: func(i *vpp_interfaces.Interface) { i.Mtu = 9000 }, created: wantLinkMTU(9000),
			update: func(i *vpp_interfaces.Interface) { i.Mtu = 1500 }, inPlace: true, updated: wantLinkMTU(1500)},
		{name: "MTU in IP mode",
			create: func(i *vpp_interfaces.Interface) {
				i.GetMemif().Mode = vpp_interfaces.MemifLink_IP
				i.Mtu = 1400
			}, created: wantL3MTU(1400),
			update: func(i *vpp_interfaces.Interface) { i.Mtu = 8000 }, inPlace: true, updated: wantL3MTU(8000)},
		{name: "MAC address",
			create: func(i *vpp_interfaces.Interface) { i.PhysAddress = "02:fe:00:00:00:01" }, created: wantMAC("02:fe:00:00:00:01"),
			update: func(i *vpp_interfaces.Interface) { i.PhysAddress = "02:FE:00:00:00:02" }, inPlace: true, updated: wantMAC("02:fe:00:00:00:02")},
		{name: "admin state",
			create: func(i *vpp_interfaces.Interface) { i.Enabled = false }, created: wantAdminUp(false),
			update: func(i *vpp_interfaces.Interface) { i.Enabled = true }, inPlace: true, updated: wantAdminUp(true)},
		{name: "addresses",
			create:  func(i *vpp_interfaces.Interface) { i.IpAddresses = []string{"10.10.1.1/24", "fd00::1/64"} },
			created: wantAddresses("10.10.1.1/24", "fd00::1/64"),
			update:  func(i *vpp_interfaces.Interface) { i.IpAddresses = []string{"10.10.2.1/24", "fd00::1/64"} }, inPlace: true,
			updated: wantAddresses("10.10.2.1/24", "fd00::1/64")},
		{name: "rx mode",
			create: func(i *vpp_interfaces.Interface) {
				i.RxModes = []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: vpp_interfaces.Interface_RxMode_INTERRUPT}}
			}, created: noVPPCheck,
			update: func(i *vpp_interfaces.Interface) {
				i.RxModes = []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: vpp_interfaces.Interface_RxMode_ADAPTIVE}}
			}, apart: true, updated: noVPPCheck},
		{name: "VRF and unnumbered to a loopback",
			others: with(vrf(10, "red"), loopback("gw-a", 10, "10.70.0.1/24", "fd00:70::1/64"), loopback("gw-b", 10, "10.71.0.1/24")),
			create: func(i *vpp_interfaces.Interface) {
				i.GetMemif().Mode = vpp_interfaces.MemifLink_IP
				i.Vrf, i.Unnumbered = 10, &vpp_interfaces.Interface_Unnumbered{InterfaceWithIp: "gw-a"}
			}, created: wantUnnumbered(10, "gw-a"),
			update:  func(i *vpp_interfaces.Interface) { i.Unnumbered.InterfaceWithIp = "gw-b" },
			inPlace: true, updated: wantUnnumbered(10, "gw-b")},
		{name: "VRF, then another VRF",
			others: merge(vrf(10, "red"), vrf(20, "blue")),
			create: func(i *vpp_interfaces.Interface) {
				i.Vrf, i.IpAddresses = 10, []string{"10.70.0.1/24"}
			}, created: wantUnnumbered(10, ""),
			update:  func(i *vpp_interfaces.Interface) { i.Vrf = 20 },
			updated: wantUnnumbered(20, "")},
	}
}

// TestMemifFields makes a memif with each field of the spec, reads it
// back from VPP, restarts the agent (a new scheduler resyncs against the
// same VPP: it must change nothing), changes the field (in place where VPP
// can, re-created otherwise) and restarts the agent again.
func TestMemifFields(t *testing.T) {
	v := vpp.Start(t)
	for _, c := range fieldCases() {
		t.Run(c.name, func(t *testing.T) {
			const name = "pod-memif"
			iface := memif(v.Dir, name, c.create)
			values := with(c.others, iface)
			key := vpp_interfaces.InterfaceKey(name)

			first := startAgent(t, v)
			first.commit(t, values)
			created := readVPP(t, v)[name]
			if created == nil {
				t.Fatalf("VPP has no interface tagged %s; it has %v", name, readVPP(t, v))
			}
			c.created(t, created)
			wantNoOps(t, "resync after an agent restart", startAgent(t, v).resync(t, values))

			second := startAgent(t, v)
			second.resync(t, values)
			changed := proto.Clone(iface).(*vpp_interfaces.Interface)
			c.update(changed)
			ops := second.commit(t, map[string]proto.Message{key: changed})
			wantOps := []kvs.TxnOperation{kvs.TxnOperation_DELETE, kvs.TxnOperation_CREATE}
			switch {
			case c.inPlace:
				wantOps = []kvs.TxnOperation{kvs.TxnOperation_UPDATE}
			case c.apart:
				wantOps = nil
			}
			var gotOps []kvs.TxnOperation
			for _, op := range ops {
				if op.Key == key {
					gotOps = append(gotOps, op.Operation)
				}
			}
			if !slices.Equal(gotOps, wantOps) {
				t.Errorf("changing the memif ran %v on it, want %v (all: %v)", gotOps, wantOps, ops)
			}
			updated := readVPP(t, v)[name]
			if updated == nil {
				t.Fatalf("VPP lost interface %s", name)
			}
			c.updated(t, updated)
			wantNoOps(t, "resync after the change and an agent restart", startAgent(t, v).resync(t, with(c.others, changed)))

			startAgent(t, v).resync(t, nil)
			if left := readVPP(t, v); len(left) != 0 {
				t.Errorf("after deleting everything VPP still has %v", left)
			}
		})
	}
}
