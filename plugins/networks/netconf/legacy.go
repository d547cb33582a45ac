package netconf

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// Legacy is what memifwiring.conf says about networks, from before
// networks.conf: its keys of the same names.
type Legacy struct {
	// BridgeDomain names the bridge domain holding every pod memif.
	BridgeDomain string
	// IPAddresses are vswitch-side addresses by namespace/pod/container.
	IPAddresses map[string][]string
	// L2XConnect pairs memifs back to back.
	L2XConnect [][]string
	// VRF is the table of every memif.
	VRF uint32
}

// WithLegacy returns c with what legacy, from memifwiring.conf, says
// about networks: a bridge-domain becomes the default l2 network (a
// network of that name in c, else a new one). ip-addresses, l2-xconnect
// and vrf apply to memifs in no network, so they are refused when c has a
// default network, and vrf also when it is an l3 network's table. Each
// problem is a *configfile.KeyError naming the memifwiring.conf key and
// saying what to write instead.
func (c Config) WithLegacy(legacy Legacy) (Config, error) {
	c.Networks = slices.Clone(c.Networks)
	var problems configfile.Problems
	if legacy.BridgeDomain != "" {
		c.adoptBridgeDomain(legacy.BridgeDomain, &problems)
	}
	if c.DefaultNetwork != "" {
		takesEvery := fmt.Sprintf("default-network %q in networks.conf puts every memif of a pod that names no network into that network", c.DefaultNetwork)
		if len(legacy.IPAddresses) > 0 {
			problems.Addf("ip-addresses", "gives addresses to memifs, but %s; instead declare an l3 network in networks.conf (%s: the vswitch side is its gateway, the first address) and name it in the pods' memif.contivpp.io/networks annotation, or remove default-network", takesEvery, suggestL3(legacy.IPAddresses))
		}
		if len(legacy.L2XConnect) > 0 {
			problems.Addf("l2-xconnect", "pairs memifs, but %s; put each pair in an l2 network of its own in networks.conf ({name: <pair name>, type: l2}) named in both pods' memif.contivpp.io/networks annotation, or remove default-network", takesEvery)
		}
		if legacy.VRF != 0 {
			problems.Addf("vrf", "applies to memifs in no network, but %s; remove vrf (each l3 network has a VRF table of its own)", takesEvery)
		}
	}
	for _, n := range c.Networks {
		if legacy.VRF != 0 && n.Type == L3 && n.TableID() == legacy.VRF {
			problems.Addf("vrf", "table %d is l3 network %q's VRF table, so memifs in no network would join that network; pick another vrf, or set id on network %q in networks.conf", legacy.VRF, n.Name, n.Name)
		}
	}
	if err := problems.Err(); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("networks.conf with memifwiring.conf's bridge-domain %q as its default l2 network: %w", legacy.BridgeDomain, err)
	}
	return c, nil
}

// adoptBridgeDomain makes the bridge domain named name the default l2
// network.
func (c *Config) adoptBridgeDomain(name string, problems *configfile.Problems) {
	const instead = "write in networks.conf: networks: [{name: <a network name>, type: l2}] and default-network: <that name>, and remove bridge-domain from memifwiring.conf"
	if c.DefaultNetwork != "" {
		problems.Addf("bridge-domain", "%q and default-network %q in networks.conf both say where the memifs of pods that name no network go; remove bridge-domain from memifwiring.conf (and add {name: ..., type: l2} to networks.conf if pods need that bridge domain)", name, c.DefaultNetwork)
		return
	}
	if reason := CheckName(name); reason != "" {
		problems.Addf("bridge-domain", "becomes the default l2 network, but a network name %s; %s", reason, instead)
		return
	}
	if n, declared := c.Network(name); declared {
		if n.Type != L2 {
			problems.Addf("bridge-domain", "%q becomes the default l2 network, but networks.conf declares %q as type %s; rename one of them", name, name, n.Type)
			return
		}
	} else {
		c.Networks = append(c.Networks, Network{Name: name, Type: L2})
	}
	c.DefaultNetwork = name
}

// suggestL3 words the l3 networks that hold addresses, one per subnet.
func suggestL3(addresses map[string][]string) string {
	subnets := map[netip.Prefix]bool{}
	for _, list := range addresses {
		for _, address := range list {
			if prefix, err := netip.ParsePrefix(address); err == nil {
				subnets[prefix.Masked()] = true
			}
		}
	}
	var entries []string
	for _, subnet := range slices.SortedFunc(maps.Keys(subnets), netip.Prefix.Compare) {
		entries = append(entries, fmt.Sprintf("{name: <name>, type: l3, subnet: %s}", subnet))
	}
	if len(entries) == 0 {
		return "{name: <name>, type: l3, subnet: <prefix>}"
	}
	return strings.Join(entries, ", ")
}
