// Package owner says which objects in VPP are the agent's. The agent tags
// every interface and bridge domain it makes, and names every VRF table,
// with Prefix followed by the model's name; the VPP descriptors read back
// (Retrieve) and so resync, change and delete only objects that carry it.
// A memif, loopback, bridge domain or table that another tool or an
// operator made (vppctl, the binary API) with another tag, or none, is
// left alone through agent restarts and resyncs.
//
// Every agent shares the one Prefix, so that the agent that replaces
// another on a node (a DaemonSet update) takes over what it left in VPP.
//
// The package is plain Go, for the descriptors, the wiring that names the
// models, and the tests that read VPP.
package owner

import "strings"

// Prefix starts the agent's tags and table names in VPP.
const Prefix = "memif-agent:"

// vppTagLength is what VPP's interface tag, bridge domain tag and table
// name hold: 64 bytes with the terminating NUL.
const vppTagLength = 63

// MaxNameLength is the longest model name (interface, bridge domain, VRF
// table label) whose tag fits VPP's fields.
const MaxNameLength = vppTagLength - len(Prefix)

// Tag is the tag in VPP of the agent's object name.
func Tag(name string) string { return Prefix + name }

// Name returns the model name of a tag read from VPP, and whether the
// object is the agent's.
func Name(tag string) (string, bool) {
	name, ours := strings.CutPrefix(tag, Prefix)
	return name, ours && name != ""
}
