package wiring

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/configfile"
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
}

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
		problems.Addf("bridge-domain", "must be at most %d characters (it is VPP's bridge domain tag), got %q", maxInterfaceNameLength, c.BridgeDomain)
	}
	if c.BridgeDomain != "" && len(c.IPAddresses) > 0 {
		problems.Addf("bridge-domain", "excludes ip-addresses: a bridged memif is L2 only")
	}
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

// addressOf returns the configured address of memif memifID of container,
// or nil.
func (c Config) addressOf(namespace, pod, container string, memifID int) []string {
	addresses := c.IPAddresses[namespace+"/"+pod+"/"+container]
	if memifID >= len(addresses) {
		return nil
	}
	return []string{addresses[memifID]}
}
