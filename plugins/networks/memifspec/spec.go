package memifspec

import (
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"slices"

	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// Mode is what a memif carries.
type Mode string

// The modes.
const (
	ModeEthernet Mode = "ethernet"
	ModeIP       Mode = "ip"
)

// VPP's memif limits and defaults (src/plugins/memif/private.h and cli.c).
const (
	DefaultQueues     = 1
	MaxQueues         = 255
	DefaultRingSize   = 1024
	MaxRingSize       = 1 << 14
	DefaultBufferSize = 2048
	MaxBufferSize     = 1<<16 - 1
	// maxContainerName is a Kubernetes container name's bound (a DNS
	// label).
	maxContainerName = 63
)

// Spec is one memif as a pod asks for it. A zero number or an empty
// string is "not set".
type Spec struct {
	Network   string `json:"network"`
	Container string `json:"container,omitempty"`
	MemifID   uint32 `json:"memif-id,omitempty"`
	Mode      Mode   `json:"mode,omitempty"`
	// Queues is the number of queue pairs (rx and tx alike).
	Queues     uint32         `json:"queues,omitempty"`
	RingSize   uint32         `json:"ring-size,omitempty"`
	BufferSize uint32         `json:"buffer-size,omitempty"`
	RxMode     netconf.RxMode `json:"rx-mode,omitempty"`
	MTU        uint32         `json:"mtu,omitempty"`
	// IPs are the pod-side addresses asked for, with the subnet's prefix
	// length ("10.70.0.11/24"); empty: one from the network's pool.
	IPs []string `json:"ips,omitempty"`
	MAC string   `json:"mac,omitempty"`
}

// Check returns why s is refused before its network is known (an
// *Error), or nil.
func (s Spec) Check() error {
	if err := s.check(); err != nil {
		return err
	}
	return nil
}

func (s Spec) check() *Error {
	for _, check := range []func() *Error{s.checkNames, s.checkEnums, s.checkLimits, s.checkMAC, s.checkIPs} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (s Spec) checkNames() *Error {
	if reason := netconf.CheckName(s.Network); reason != "" {
		return refuse(ReasonMalformed, "network", "a network name %s", reason)
	}
	if s.Container != "" && (len(s.Container) > maxContainerName || !isLabel(s.Container)) {
		return refuse(ReasonMalformed, "container", "want a container name (lower-case letters, digits and '-', at most %d characters), got %s", maxContainerName, quoted(s.Container))
	}
	return nil
}

// isLabel tells whether name is a DNS label of any length.
func isLabel(name string) bool {
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' && i > 0 && i < len(name)-1) {
			return false
		}
	}
	return name != ""
}

func (s Spec) checkEnums() *Error {
	if s.Mode != "" && s.Mode != ModeIP && s.Mode != ModeEthernet {
		return refuse(ReasonMalformed, "mode", "want ip or ethernet, got %s", quoted(string(s.Mode)))
	}
	if !s.RxMode.Valid() {
		return refuse(ReasonMalformed, "rx-mode", "want polling, interrupt or adaptive, got %s", quoted(string(s.RxMode)))
	}
	return nil
}

func (s Spec) checkLimits() *Error {
	switch {
	case s.Queues > MaxQueues:
		return refuse(ReasonTooManyQueues, "queues", "VPP's memif takes at most %d queue pairs, got %d", MaxQueues, s.Queues)
	case s.RingSize != 0 && (s.RingSize > MaxRingSize || bits.OnesCount32(s.RingSize) != 1):
		return refuse(ReasonBadRingSize, "ring-size", "want a power of two from 1 to %d (VPP's memif cuts a larger ring to %d), got %d", MaxRingSize, MaxRingSize, s.RingSize)
	case s.BufferSize > MaxBufferSize:
		return refuse(ReasonBadBufferSize, "buffer-size", "want at most %d bytes (VPP's 16-bit field), got %d", MaxBufferSize, s.BufferSize)
	case s.MTU != 0 && (s.MTU < netconf.MinMTU || s.MTU > netconf.MaxMTU):
		return refuse(ReasonBadMTU, "mtu", "want from %d to %d, got %d", netconf.MinMTU, netconf.MaxMTU, s.MTU)
	}
	return nil
}

func (s Spec) checkMAC() *Error {
	if s.MAC == "" {
		return nil
	}
	mac, err := net.ParseMAC(s.MAC)
	switch {
	case err != nil || len(mac) != 6:
		return refuse(ReasonMalformed, "mac", "want a MAC address such as 02:fe:00:00:00:01, got %s", quoted(s.MAC))
	case mac[0]&1 != 0:
		return refuse(ReasonBadMAC, "mac", "%s is a multicast address; want a unicast one (first octet even), such as 02:fe:00:00:00:01", mac)
	case slices.Equal(mac, make(net.HardwareAddr, 6)):
		return refuse(ReasonBadMAC, "mac", "the all-zero address is no interface's; want one such as 02:fe:00:00:00:01")
	}
	return nil
}

func (s Spec) checkIPs() *Error {
	if len(s.IPs) > 1 {
		return refuse(ReasonTooManyAddresses, "ips", "a network has one subnet, so a memif takes one address of it, got %d", len(s.IPs))
	}
	for _, ip := range s.IPs {
		prefix, err := netip.ParsePrefix(ip)
		if err != nil || prefix.Addr().Zone() != "" {
			return refuse(ReasonMalformed, "ips", "want an address with the subnet's prefix length such as 10.70.0.11/24, got %s", quoted(ip))
		}
	}
	return nil
}

// Memif is a spec resolved against its network, every default filled in.
type Memif struct {
	Network   netconf.Network
	Container string
	MemifID   uint32
	Mode      Mode
	Queues    uint32
	RingSize  uint32
	// BufferSize is in bytes.
	BufferSize uint32
	// RxMode is the spec's, else the network's; empty: the vswitch's.
	RxMode netconf.RxMode
	// MTU is the spec's, else the network's; 0: the vswitch's.
	MTU uint32
	// IPs are the addresses asked for; empty: one from the pool.
	IPs []netip.Prefix
	// MAC is nil when VPP picks one.
	MAC net.HardwareAddr
}

// Resolve checks s against the networks and fills in the defaults.
func (s Spec) Resolve(networks netconf.Config) (Memif, error) {
	if err := s.Check(); err != nil {
		return Memif{}, err
	}
	network, ok := networks.Network(s.Network)
	if !ok {
		return Memif{}, refuse(ReasonUnknownNetwork, "network", "no network %q on this node; the networks are %s", s.Network, networkNames(networks))
	}
	m := Memif{Network: network, Container: s.Container, MemifID: s.MemifID, Mode: s.Mode,
		Queues: orDefault(s.Queues, DefaultQueues), RingSize: orDefault(s.RingSize, DefaultRingSize),
		BufferSize: orDefault(s.BufferSize, DefaultBufferSize), RxMode: s.RxMode, MTU: orDefault(s.MTU, network.MTU)}
	if m.RxMode == "" {
		m.RxMode = network.RxMode
	}
	carried := ModeEthernet
	if network.Type == netconf.L3 {
		carried = ModeIP
	}
	if m.Mode == "" {
		m.Mode = carried
	}
	if m.Mode != carried {
		return Memif{}, refuse(ReasonModeNotCarried, "mode", "%s network %q carries %s memifs, not %s", network.Type, network.Name, carried, m.Mode)
	}
	if m.MTU != 0 && m.MTU < network.MinMTU() {
		return Memif{}, refuse(ReasonBadMTU, "mtu", "network %q is IPv6, whose links take at least %d, got %d", network.Name, network.MinMTU(), m.MTU)
	}
	if s.MAC != "" {
		if m.Mode == ModeIP {
			return Memif{}, refuse(ReasonBadMAC, "mac", "an ip-mode memif carries no ethernet header, so it has no MAC; remove mac")
		}
		m.MAC, _ = net.ParseMAC(s.MAC)
	}
	ips, err := s.resolveIPs(network)
	if err != nil {
		return Memif{}, err
	}
	m.IPs = ips
	return m, nil
}

func (s Spec) resolveIPs(network netconf.Network) ([]netip.Prefix, error) {
	if len(s.IPs) > 0 && network.Type != netconf.L3 {
		return nil, refuse(ReasonAddressOutsideSubnet, "ips", "%s network %q has no subnet; remove ips", network.Type, network.Name)
	}
	subnet := network.Prefix()
	var ips []netip.Prefix
	for _, ip := range s.IPs {
		prefix := netip.MustParsePrefix(ip)
		if !subnet.Contains(prefix.Addr()) {
			return nil, refuse(ReasonAddressOutsideSubnet, "ips", "%s is not in network %q's subnet %s", prefix.Addr(), network.Name, subnet)
		}
		if prefix.Bits() != subnet.Bits() {
			return nil, refuse(ReasonAddressOutsideSubnet, "ips", "%s has another prefix length than network %q's subnet %s: write %s/%d", prefix, network.Name, subnet, prefix.Addr(), subnet.Bits())
		}
		ips = append(ips, prefix)
	}
	return ips, nil
}

func orDefault(value, def uint32) uint32 {
	if value == 0 {
		return def
	}
	return value
}

func networkNames(c netconf.Config) string {
	if len(c.Networks) == 0 {
		return "none"
	}
	var names string
	for i, n := range c.Networks {
		if i > 0 {
			names += ", "
		}
		names += n.Name
	}
	return names
}

// conflicts tells whether s and other name one memif: the same memif ID
// in the same container, or in every container.
func (s Spec) conflicts(other Spec) bool {
	return s.MemifID == other.MemifID && (s.Container == other.Container || s.Container == "" || other.Container == "")
}

// String names the memif the spec is for.
func (s Spec) String() string {
	container := s.Container
	if container == "" {
		container = "every container"
	}
	return fmt.Sprintf("memif %d of %s in network %s", s.MemifID, container, s.Network)
}
