package netconf

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strings"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// Type is what a network carries.
type Type string

const (
	// L3 is a routed network: a VRF table of its own, the node's VPP the
	// pods' gateway, one address per memif from the subnet.
	L3 Type = "l3"
	// L2 is a bridge domain: ethernet frames, flooding and learning.
	L2 Type = "l2"
)

// RxMode is how VPP polls a memif's queues.
type RxMode string

// The rx modes; empty is the vswitch default.
const (
	RxPolling   RxMode = "polling"
	RxInterrupt RxMode = "interrupt"
	RxAdaptive  RxMode = "adaptive"
)

// Valid tells whether m is an rx mode or empty.
func (m RxMode) Valid() bool {
	return m == "" || m == RxPolling || m == RxInterrupt || m == RxAdaptive
}

const (
	// MaxNameLength bounds a network name, so that the names derived from
	// it on the vswitch (the bridge domain's tag, the gateway loopback's
	// tag) fit VPP's 63-byte tags with room for a prefix.
	MaxNameLength = 32
	// MaxNetworks bounds how many networks one file declares.
	MaxNetworks = 256
	// MaxID is the largest VRF table or bridge domain ID (VPP's
	// L2_BD_ID_MAX, 2^24-1; VRF tables share the range so that IDs stay
	// readable).
	MaxID = 1<<24 - 1
	// MinMTU and MaxMTU bound an MTU: IPv4's minimum datagram every host
	// takes, and VPP's largest ethernet frame (ETHERNET_MAX_PACKET_BYTES).
	MinMTU = 576
	MaxMTU = 9216
	// MinMTUIPv6 is IPv6's minimum link MTU.
	MinMTUIPv6 = 1280
	// DefaultNodePrefixLength and DefaultNodePrefixLengthIPv6 are a node's
	// share of an l3 subnet when node-prefix-length is 0: 64 addresses, as
	// Calico's IPAM blocks, so a /24 serves 4 nodes and a /16 1024. A
	// subnet smaller than that is one share: a single node's.
	DefaultNodePrefixLength     = 26
	DefaultNodePrefixLengthIPv6 = 122
	// MaxNodePrefixLength and MaxNodePrefixLengthIPv6 are the smallest
	// shares: room for the gateway and a pod in any share of the subnet.
	MaxNodePrefixLength     = 30
	MaxNodePrefixLengthIPv6 = 126
)

// Network is one entry of networks.conf.
type Network struct {
	// Name is a DNS label of at most MaxNameLength characters.
	Name string `json:"name"`
	// Type is l3 or l2.
	Type Type `json:"type"`
	// Subnet is an l3 network's prefix, IPv4 or IPv6, written with its
	// host bits zero ("10.70.0.0/24"); an l2 network has none.
	Subnet string `json:"subnet,omitempty"`
	// ID is the VRF table (l3) or bridge domain (l2) ID; 0: derived from
	// the name (see the package doc).
	ID uint32 `json:"id,omitempty"`
	// MTU is the default MTU of the network's memifs; 0: the vswitch's.
	MTU uint32 `json:"mtu,omitempty"`
	// RxMode is the default rx mode of the network's memifs; empty: the
	// vswitch's.
	RxMode RxMode `json:"rx-mode,omitempty"`
	// NodePrefixLength is the prefix length of each node's share of an
	// l3 network's subnet (a node hands out addresses from its share
	// only); 0: NodePrefix's default.
	NodePrefixLength int `json:"node-prefix-length,omitempty"`
}

// Config is networks.conf. The zero value declares no network.
type Config struct {
	Networks []Network `json:"networks"`
	// DefaultNetwork is the network of the memifs of pods that name none;
	// empty: such memifs are in no network (plain ethernet memifs, wired by
	// memifwiring.conf as before networks existed).
	DefaultNetwork string `json:"default-network"`
}

// Decode reads networks.conf content strictly and validates it.
func Decode(content []byte) (Config, error) {
	var cfg Config
	if err := configfile.Decode(content, &cfg); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Network returns the network named name.
func (c Config) Network(name string) (Network, bool) {
	i := slices.IndexFunc(c.Networks, func(n Network) bool { return n.Name == name })
	if i < 0 {
		return Network{}, false
	}
	return c.Networks[i], true
}

// Prefix is the network's subnet; the zero prefix for an l2 network. It is
// meaningful only for a validated network.
func (n Network) Prefix() netip.Prefix {
	prefix, _ := netip.ParsePrefix(n.Subnet)
	return prefix
}

// NodePrefix is the prefix length of a node's share of the network's
// subnet: NodePrefixLength when set, else the default for the subnet's
// family, never shorter than the subnet. 0 for an l2 network. It is
// meaningful only for a validated network.
func (n Network) NodePrefix() int {
	subnet := n.Prefix()
	switch {
	case n.Type != L3 || !subnet.IsValid():
		return 0
	case n.NodePrefixLength != 0:
		return n.NodePrefixLength
	case subnet.Addr().Is4():
		return max(subnet.Bits(), DefaultNodePrefixLength)
	default:
		return max(subnet.Bits(), DefaultNodePrefixLengthIPv6)
	}
}

// TableID is the network's VRF table (l3) or bridge domain (l2) ID: ID
// when set, else derived from the name.
func (n Network) TableID() uint32 {
	if n.ID != 0 {
		return n.ID
	}
	return DeriveID(n.Name)
}

// DeriveID folds name's FNV-1a hash into 1..MaxID.
func DeriveID(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()%MaxID + 1
}

// Validate checks every network and the default network, and returns all
// problems found, each a *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	if len(c.Networks) > MaxNetworks {
		problems.Addf("networks", "must list at most %d networks, got %d", MaxNetworks, len(c.Networks))
	}
	seen := map[string]int{}
	for i, n := range c.Networks {
		for _, reason := range n.problems() {
			problems.Addf("networks", "entry %d (%s): %s", i+1, quoted(n.Name), reason)
		}
		if first, dup := seen[n.Name]; dup && n.Name != "" {
			problems.Addf("networks", "entries %d and %d are both named %q; names must be unique", first, i+1, n.Name)
			continue
		}
		seen[n.Name] = i + 1
	}
	c.checkIDs(&problems)
	c.checkVNIs(&problems)
	if _, ok := seen[c.DefaultNetwork]; c.DefaultNetwork != "" && !ok {
		problems.Addf("default-network", "%s is not a network of this file; the networks are %s", quoted(c.DefaultNetwork), c.names())
	}
	return problems.Err()
}

// problems returns what is wrong with one network.
func (n Network) problems() []string {
	var found []string
	add := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }
	if reason := CheckName(n.Name); reason != "" {
		add("name %s", reason)
	}
	switch n.Type {
	case L3:
		if reason := checkSubnet(n.Subnet); reason != "" {
			add("subnet %s", reason)
		} else if reason := n.checkNodePrefix(); reason != "" {
			add("node-prefix-length %s", reason)
		}
	case L2:
		if n.Subnet != "" {
			add("an l2 network has no subnet (the node's VPP holds no address in it): remove subnet %s, or make it type l3", quoted(n.Subnet))
		}
		if n.NodePrefixLength != 0 {
			add("an l2 network has no subnet to share between nodes: remove node-prefix-length %d", n.NodePrefixLength)
		}
	default:
		add("type must be l3 or l2, got %s", quoted(string(n.Type)))
	}
	if n.ID > MaxID {
		add("id must be from 1 to %d (0: derived from the name), got %d", MaxID, n.ID)
	}
	if minMTU := n.MinMTU(); n.MTU != 0 && (n.MTU < minMTU || n.MTU > MaxMTU) {
		add("mtu must be from %d to %d (0: the vswitch default), got %d", minMTU, MaxMTU, n.MTU)
	}
	if !n.RxMode.Valid() {
		add("rx-mode must be polling, interrupt, adaptive or empty, got %s", quoted(string(n.RxMode)))
	}
	return found
}

// MinMTU is the smallest MTU a memif of the network may have: IPv6's
// minimum link MTU on an IPv6 subnet, else MinMTU.
func (n Network) MinMTU() uint32 {
	if n.Type == L3 && n.Prefix().Addr().Is6() {
		return MinMTUIPv6
	}
	return MinMTU
}

// CheckName returns why name is not a network name, or "". A network
// name is a DNS label (lower-case letters, digits and '-', starting and
// ending with a letter or digit) of at most MaxNameLength characters.
func CheckName(name string) string {
	switch {
	case name == "":
		return "is required"
	case len(name) > MaxNameLength:
		return fmt.Sprintf("must be at most %d characters, got %d", MaxNameLength, len(name))
	case name[0] == '-' || name[len(name)-1] == '-' || strings.IndexFunc(name, notLabelRune) >= 0:
		return fmt.Sprintf("must be lower-case letters, digits and '-', starting and ending with a letter or digit, got %s", quoted(name))
	}
	return ""
}

func notLabelRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
}

// checkSubnet returns why subnet is not an l3 network's subnet, or "".
func checkSubnet(subnet string) string {
	if subnet == "" {
		return "is required for an l3 network, for example 10.70.0.0/24 or fd00:70::/64"
	}
	prefix, err := netip.ParsePrefix(subnet)
	switch {
	case err != nil || prefix.Addr().Zone() != "":
		return fmt.Sprintf("must be an IPv4 or IPv6 prefix such as 10.70.0.0/24, got %s", quoted(subnet))
	case prefix.Addr().Is4In6():
		return fmt.Sprintf("must be an IPv4 or an IPv6 prefix, not an IPv4-mapped one, got %s", quoted(subnet))
	case prefix != prefix.Masked():
		return fmt.Sprintf("must have its host bits zero: write %s, got %s", prefix.Masked(), quoted(subnet))
	case prefix.Addr().Is4() && prefix.Bits() > 30 || prefix.Addr().Is6() && prefix.Bits() > 126:
		return fmt.Sprintf("%s is too small: it needs room for the gateway and a pod beside the network (and broadcast) address; the longest prefixes are /30 and /126", subnet)
	}
	return ""
}

// checkNodePrefix returns why the node-prefix-length of an l3 network with
// a valid subnet is wrong, or "".
func (n Network) checkNodePrefix() string {
	if n.NodePrefixLength == 0 {
		return ""
	}
	longest := MaxNodePrefixLength
	if n.Prefix().Addr().Is6() {
		longest = MaxNodePrefixLengthIPv6
	}
	if bits := n.Prefix().Bits(); n.NodePrefixLength < bits || n.NodePrefixLength > longest {
		return fmt.Sprintf("must be from %d (subnet %s, one node's) to %d (room for the gateway and a pod in each node's share), or 0 for the default, got %d", bits, n.Subnet, longest, n.NodePrefixLength)
	}
	return ""
}

// checkIDs refuses two networks of one type with one VRF table or bridge
// domain ID.
func (c Config) checkIDs(problems *configfile.Problems) {
	holder := map[Type]map[uint32]string{L3: {}, L2: {}}
	for _, n := range c.Networks {
		ids, known := holder[n.Type]
		if !known || n.ID > MaxID {
			continue
		}
		id := n.TableID()
		if other, taken := ids[id]; taken && other != n.Name {
			problems.Addf("networks", "%s and %s would both use %s %d; set id on one of them to a free one from 1 to %d", quoted(other), quoted(n.Name), n.Type.idName(), id, MaxID)
			continue
		}
		ids[id] = n.Name
	}
}

// VNI is the VXLAN network identifier that carries the network between
// nodes: derived from the name alone, so that every node agrees on it
// whatever ids the nodes' files set, and apart from the VRF table and
// bridge domain IDs, which an l3 and an l2 network may share.
func (n Network) VNI() uint32 { return DeriveID("vni:" + n.Name) }

// checkVNIs refuses two networks whose names give one VNI.
func (c Config) checkVNIs(problems *configfile.Problems) {
	holder := map[uint32]string{}
	for _, n := range c.Networks {
		vni := n.VNI()
		if other, taken := holder[vni]; taken && other != n.Name {
			problems.Addf("networks", "%s and %s would both use VXLAN network identifier %d between nodes; rename one of them", quoted(other), quoted(n.Name), vni)
			continue
		}
		holder[vni] = n.Name
	}
}

// idName is what a network's ID is on the vswitch.
func (t Type) idName() string {
	if t == L3 {
		return "VRF table"
	}
	return "bridge domain"
}

func (c Config) names() string {
	if len(c.Networks) == 0 {
		return "none"
	}
	names := make([]string, len(c.Networks))
	for i, n := range c.Networks {
		names[i] = n.Name
	}
	return strings.Join(names, ", ")
}

// maxQuoted bounds how much of a value a message repeats.
const maxQuoted = 64

// quoted quotes s for a message, cut to maxQuoted bytes.
func quoted(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := strings.ToValidUTF8(s[:maxQuoted], "")
	return fmt.Sprintf("%q... (%d bytes)", cut, len(s))
}
