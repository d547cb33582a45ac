package crossnode

import (
	"maps"
	"net/netip"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// The environment read when a key is empty (the chart sets both from the
// pod's fields).
const (
	NodeNameEnv     = "NODE_NAME"
	NamespaceEnv    = "POD_NAMESPACE"
	maxHostIfLength = 15
)

// Underlay is a node's way into the underlay between nodes.
type Underlay struct {
	// Interface is the Linux interface in VPP's network namespace that
	// VPP takes (af_packet) into the underlay.
	Interface string `json:"underlay-interface"`
	// Address is VPP's address on it with the underlay's prefix length
	// ("192.168.230.1/24"); empty: off.
	Address string `json:"underlay-address"`
}

// Config is crossnode.conf. The zero Config is off: networks end at the
// node.
type Config struct {
	// UnderlayInterface and UnderlayAddress are every node's Underlay,
	// unless Nodes names the node.
	UnderlayInterface string `json:"underlay-interface"`
	UnderlayAddress   string `json:"underlay-address"`
	// Nodes are the nodes' underlays by node name, so that one file (the
	// DaemonSet's ConfigMap) serves every node.
	Nodes map[string]Underlay `json:"nodes"`
	// NodeName is this node's name; empty: $NODE_NAME.
	NodeName string `json:"node-name"`
	// Namespace holds the Leases of the nodes' shares; empty:
	// $POD_NAMESPACE, the agent's.
	Namespace string `json:"namespace"`
	// Kubeconfig is the API server's kubeconfig file; empty: the pod's
	// service account (in-cluster).
	Kubeconfig string `json:"kubeconfig"`
}

// Enabled tells whether the networks may span nodes: some node has an
// underlay address.
func (c Config) Enabled() bool { return c.UnderlayAddress != "" || len(c.Nodes) > 0 }

// For is node's underlay: its entry in Nodes, else every node's; the
// zero Underlay (off) when neither sets an address.
func (c Config) For(node string) Underlay {
	if u, ok := c.Nodes[node]; ok {
		return u
	}
	return Underlay{Interface: c.UnderlayInterface, Address: c.UnderlayAddress}
}

// Prefix is the underlay address; meaningful for a valid Config's.
func (u Underlay) Prefix() netip.Prefix {
	prefix, _ := netip.ParsePrefix(u.Address)
	return prefix
}

// problems adds why u is not a node's underlay, under key (where in the
// file).
func (u Underlay) problems(problems *configfile.Problems, key string) {
	if u.Address == "" {
		return
	}
	if prefix, err := netip.ParsePrefix(u.Address); err != nil || prefix.Addr().Zone() != "" || prefix.Addr().Is4In6() || prefix.Masked().Addr() == prefix.Addr() {
		problems.Addf(key+"underlay-address", "must be VPP's address on the underlay with its prefix length, such as 192.168.230.1/24, got %q", u.Address)
	}
	if n := len(u.Interface); n == 0 || n > maxHostIfLength {
		problems.Addf(key+"underlay-interface", "must name the Linux interface VPP takes into the underlay (1 to %d bytes) when underlay-address is set, got %q", maxHostIfLength, u.Interface)
	}
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	if !c.Enabled() {
		return nil
	}
	Underlay{Interface: c.UnderlayInterface, Address: c.UnderlayAddress}.problems(&problems, "")
	for _, node := range slices.Sorted(maps.Keys(c.Nodes)) {
		c.Nodes[node].problems(&problems, "nodes."+node+".")
	}
	if c.NodeName != "" {
		for _, reason := range validation.IsDNS1123Subdomain(c.NodeName) {
			problems.Addf("node-name", "must be a node name (DNS subdomain) or empty for $%s: %s, got %q", NodeNameEnv, reason, c.NodeName)
		}
	}
	if c.Namespace != "" {
		for _, reason := range validation.IsDNS1123Label(c.Namespace) {
			problems.Addf("namespace", "must be a namespace name or empty for $%s: %s, got %q", NamespaceEnv, reason, c.Namespace)
		}
	}
	if c.Kubeconfig != "" && !filepath.IsAbs(c.Kubeconfig) {
		problems.Addf("kubeconfig", "must be an absolute path, or empty for the pod's service account, got %q", c.Kubeconfig)
	}
	return problems.Err()
}
