package crossnode

import (
	"net/netip"
	"path/filepath"

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

// Config is crossnode.conf. The zero Config is off: networks end at the
// node.
type Config struct {
	// UnderlayInterface is the Linux interface in VPP's network namespace
	// that VPP takes (af_packet) into the underlay between nodes.
	UnderlayInterface string `json:"underlay-interface"`
	// UnderlayAddress is VPP's address on it with the underlay's prefix
	// length ("192.168.230.1/24"); empty: off.
	UnderlayAddress string `json:"underlay-address"`
	// NodeName is this node's name; empty: $NODE_NAME.
	NodeName string `json:"node-name"`
	// Namespace holds the Leases of the nodes' shares; empty:
	// $POD_NAMESPACE, the agent's.
	Namespace string `json:"namespace"`
	// Kubeconfig is the API server's kubeconfig file; empty: the pod's
	// service account (in-cluster).
	Kubeconfig string `json:"kubeconfig"`
}

// Enabled tells whether the networks span nodes.
func (c Config) Enabled() bool { return c.UnderlayAddress != "" }

// Address is the underlay address; meaningful for a valid Config.
func (c Config) Address() netip.Prefix {
	prefix, _ := netip.ParsePrefix(c.UnderlayAddress)
	return prefix
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	if !c.Enabled() {
		return nil
	}
	if prefix, err := netip.ParsePrefix(c.UnderlayAddress); err != nil || prefix.Addr().Zone() != "" || prefix.Addr().Is4In6() || prefix.Masked().Addr() == prefix.Addr() {
		problems.Addf("underlay-address", "must be VPP's address on the underlay with its prefix length, such as 192.168.230.1/24, got %q", c.UnderlayAddress)
	}
	if n := len(c.UnderlayInterface); n == 0 || n > maxHostIfLength {
		problems.Addf("underlay-interface", "must name the Linux interface VPP takes into the underlay (1 to %d bytes) when underlay-address is set, got %q", maxHostIfLength, c.UnderlayInterface)
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
