package wiring

import (
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/configfile"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Config is what the vswitch side of every memif gets besides what the
// allocation defines. The zero value leaves everything to the vswitch's
// defaults. The JSON names are the keys of memifwiring.conf.
type Config struct {
	// MTU of every memif interface; 0: the vswitch default.
	MTU uint32 `json:"mtu"`
	// VRF table of every memif interface; 0: the default table.
	VRF uint32 `json:"vrf"`
	// RxMode of every memif interface: "polling", "interrupt", "adaptive",
	// or empty for the vswitch default.
	RxMode string `json:"rx-mode"`
	// IPAddresses gives the vswitch-side addresses of a container's memifs:
	// keyed by "namespace/pod/container", one list entry per memif ID (the
	// first entry is memif 0). Each entry is an address with its prefix
	// length, for example "10.10.1.1/24".
	IPAddresses map[string][]string `json:"ip-addresses"`
	// BridgeDomain, when set, names the vswitch bridge domain that holds
	// every pod memif of the node (flooding, forwarding and learning on),
	// so that pods reach each other at L2 through the vswitch. Empty: no
	// bridge domain.
	BridgeDomain string `json:"bridge-domain"`
	// L2XConnect pairs pod memifs in vswitch L2 cross-connects, so that
	// what one pod sends the other receives and back, with no switching
	// between them. Each entry is a pair of memifs, each named
	// "namespace/pod/container" (the container's memif 0) or
	// "namespace/pod/container/N" (its memif N); a memif is in one pair at
	// most. A pair waits until both memifs exist on the node. Empty: no
	// cross-connect.
	L2XConnect [][]string `json:"l2-xconnect"`
}

// memifRef names one memif of a pod's container in memifwiring.conf.
type memifRef struct {
	pod       podapi.PodID
	container string
	memifID   int
}

// parseMemifRef reads "namespace/pod/container" (memif 0) or
// "namespace/pod/container/N".
func parseMemifRef(s string) (memifRef, bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 && len(parts) != 4 || slices.Contains(parts, "") {
		return memifRef{}, false
	}
	ref := memifRef{pod: podapi.PodID{Namespace: parts[0], Name: parts[1]}, container: parts[2]}
	if len(parts) == 4 {
		id, err := strconv.Atoi(parts[3])
		if err != nil || id < 0 || parts[3] != strconv.Itoa(id) {
			return memifRef{}, false
		}
		ref.memifID = id
	}
	return ref, true
}

// interfaceName is the name Render gives the memif.
func (r memifRef) interfaceName() string { return interfaceName(r.pod, r.container, r.memifID) }

var rxModes = map[string]vpp_interfaces.Interface_RxMode_Type{
	"polling":   vpp_interfaces.Interface_RxMode_POLLING,
	"interrupt": vpp_interfaces.Interface_RxMode_INTERRUPT,
	"adaptive":  vpp_interfaces.Interface_RxMode_ADAPTIVE,
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	if _, ok := rxModes[c.RxMode]; c.RxMode != "" && !ok {
		problems.Addf("rx-mode", "must be polling, interrupt, adaptive or empty, got %q", c.RxMode)
	}
	if len(c.BridgeDomain) > maxInterfaceNameLength {
		problems.Addf("bridge-domain", "must be at most %d characters (VPP's bridge domain tag holds it after the agent's prefix), got %q", maxInterfaceNameLength, c.BridgeDomain)
	}
	if c.BridgeDomain != "" && len(c.IPAddresses) > 0 {
		problems.Addf("bridge-domain", "excludes ip-addresses: a bridged memif is L2 only")
	}
	c.validateL2XConnect(&problems)
	for _, container := range slices.Sorted(maps.Keys(c.IPAddresses)) {
		parts := strings.Split(container, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			problems.Addf("ip-addresses", "must be keyed by namespace/pod/container, got %q", container)
			continue
		}
		for _, address := range c.IPAddresses[container] {
			if _, err := netip.ParsePrefix(address); err != nil {
				problems.Addf("ip-addresses", "entry %q of %s must be an address with prefix length such as 10.10.1.1/24: %v", address, container, err)
			}
		}
	}
	return problems.Err()
}

// validateL2XConnect checks that l2-xconnect holds pairs of distinct
// memifs, each memif in one pair at most, and nothing that would put an
// L3 address or a bridge domain on them.
func (c Config) validateL2XConnect(problems *configfile.Problems) {
	if len(c.L2XConnect) == 0 {
		return
	}
	if c.BridgeDomain != "" {
		problems.Addf("l2-xconnect", "excludes bridge-domain: a memif is either in the bridge domain or cross-connected")
	}
	if len(c.IPAddresses) > 0 {
		problems.Addf("l2-xconnect", "excludes ip-addresses: a cross-connected memif is L2 only")
	}
	pairedIn := map[string]int{}
	for i, pair := range c.L2XConnect {
		if len(pair) != 2 {
			problems.Addf("l2-xconnect", "entry %d must be a pair of two memifs, got %d: %q", i+1, len(pair), pair)
			continue
		}
		var names []string
		for _, memif := range pair {
			ref, ok := parseMemifRef(memif)
			if !ok {
				problems.Addf("l2-xconnect", "entry %d: %q must name a memif as namespace/pod/container or namespace/pod/container/N (memif N of the container)", i+1, memif)
				continue
			}
			names = append(names, ref.interfaceName())
		}
		if len(names) == 2 && names[0] == names[1] {
			problems.Addf("l2-xconnect", "entry %d pairs %s with itself, want two memifs", i+1, pair[0])
			continue
		}
		for j, name := range names {
			if first, taken := pairedIn[name]; taken {
				problems.Addf("l2-xconnect", "%s is in entries %d and %d; a memif is cross-connected to one other at most", pair[j], first, i+1)
				continue
			}
			pairedIn[name] = i + 1
		}
	}
}

// addressOf returns the configured address of memif memifID of container,
// or nil.
func (c Config) addressOf(namespace, pod, container string, memifID int) []string {
	addresses := c.IPAddresses[namespace+"/"+pod+"/"+container]
	if memifID >= len(addresses) {
		return nil
	}
	return []string{addresses[memifID]}
}
