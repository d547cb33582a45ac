package netconf

import (
	"fmt"
	"slices"
	"strings"
)

// Change is a kind of network change that would pull the network from
// under the pods that use it.
type Change string

// The changes Reconcile refuses while pods use the network; each is a
// metric label.
const (
	ChangeRemoved Change = "removed"
	ChangeType    Change = "type-changed"
	ChangeSubnet  Change = "subnet-changed"
	ChangeID      Change = "id-changed"
	// ChangeNodePrefix is a new node-prefix-length: the node's share of
	// the subnet would move.
	ChangeNodePrefix Change = "node-prefix-changed"
	// ChangeIDHeld is a new or changed network whose VRF table or bridge
	// domain ID is held by a network kept for its pods.
	ChangeIDHeld Change = "id-held"
)

// Refusal is one network change Reconcile refused.
type Refusal struct {
	// Network is the network whose change waits.
	Network string
	Change  Change
	// Pods are the live pods that hold it back ("namespace/name"), sorted.
	Pods []string
	// HeldBy is the network those pods use: Network itself, or for
	// ChangeIDHeld the network holding the ID.
	HeldBy string
	// Detail says what the change was.
	Detail string
}

// maxNamedPods bounds how many pods a refusal's message names.
const maxNamedPods = 5

// Error words the refusal for a log line or an event.
func (r Refusal) Error() string {
	pods := r.Pods
	more := ""
	if len(pods) > maxNamedPods {
		more = fmt.Sprintf(" and %d more", len(pods)-maxNamedPods)
		pods = pods[:maxNamedPods]
	}
	network := "it"
	if r.HeldBy != r.Network {
		network = fmt.Sprintf("network %q", r.HeldBy)
	}
	return fmt.Sprintf("network %q: %s is refused while pods %s%s use %s; it applies once they are gone", r.Network, r.Detail, strings.Join(pods, ", "), more, network)
}

// Reconcile returns the config to apply when desired replaces applied,
// and the network changes refused: a network that live pods use (podsOf:
// network name to pod names; a network absent or with no pods is unused)
// keeps its applied entry when desired removes it or changes its type,
// subnet, ID or node share length. Every other change applies, the default network included
// (a memif keeps the network it was wired into). A new or changed network
// whose ID a kept network holds is refused too. Both configs must be
// valid; so is the result.
func Reconcile(applied, desired Config, podsOf map[string][]string) (Config, []Refusal) {
	result := Config{DefaultNetwork: desired.DefaultNetwork}
	var refusals []Refusal
	kept := map[string]bool{}
	for _, n := range desired.Networks {
		old, had := applied.Network(n.Name)
		if pods := podsOf[n.Name]; had && len(pods) > 0 {
			if change, detail := pulling(old, n); change != "" {
				refusals = append(refusals, Refusal{Network: n.Name, Change: change, Pods: sorted(pods), HeldBy: n.Name, Detail: detail})
				result.Networks = append(result.Networks, old)
				kept[n.Name] = true
				continue
			}
		}
		result.Networks = append(result.Networks, n)
	}
	for _, old := range applied.Networks {
		if _, stays := desired.Network(old.Name); stays || len(podsOf[old.Name]) == 0 {
			continue
		}
		refusals = append(refusals, Refusal{Network: old.Name, Change: ChangeRemoved, Pods: sorted(podsOf[old.Name]), HeldBy: old.Name, Detail: "its removal"})
		result.Networks = append(result.Networks, old)
		kept[old.Name] = true
	}
	if len(kept) > 0 {
		refusals = append(refusals, result.yieldHeldIDs(kept, podsOf)...)
	}
	if _, ok := result.Network(result.DefaultNetwork); !ok {
		result.DefaultNetwork = ""
		if _, ok := result.Network(applied.DefaultNetwork); ok {
			result.DefaultNetwork = applied.DefaultNetwork
		}
	}
	return result, refusals
}

// pulling tells how new would pull old from under its pods, if it would.
func pulling(old, new Network) (Change, string) {
	switch {
	case old.Type != new.Type:
		return ChangeType, fmt.Sprintf("changing its type from %s to %s", old.Type, new.Type)
	case old.Subnet != new.Subnet:
		return ChangeSubnet, fmt.Sprintf("changing its subnet from %s to %s", old.Subnet, new.Subnet)
	case old.TableID() != new.TableID():
		return ChangeID, fmt.Sprintf("changing its %s from %d to %d", old.Type.idName(), old.TableID(), new.TableID())
	case old.NodePrefix() != new.NodePrefix():
		return ChangeNodePrefix, fmt.Sprintf("changing its node-prefix-length from %d to %d", old.NodePrefix(), new.NodePrefix())
	}
	return "", ""
}

// yieldHeldIDs takes out of c each network that is not kept and whose ID
// a kept network holds, and returns the refusals. Such a network has no
// pods: one that has keeps its applied ID, which no other applied network
// holds.
func (c *Config) yieldHeldIDs(kept map[string]bool, podsOf map[string][]string) []Refusal {
	heldBy := map[Type]map[uint32]string{L3: {}, L2: {}}
	for _, n := range c.Networks {
		if kept[n.Name] {
			heldBy[n.Type][n.TableID()] = n.Name
		}
	}
	var refusals []Refusal
	networks := c.Networks[:0:0]
	for _, n := range c.Networks {
		holder, held := heldBy[n.Type][n.TableID()]
		if kept[n.Name] || !held {
			networks = append(networks, n)
			continue
		}
		refusals = append(refusals, Refusal{Network: n.Name, Change: ChangeIDHeld, Pods: sorted(podsOf[holder]), HeldBy: holder,
			Detail: fmt.Sprintf("taking %s %d", n.Type.idName(), n.TableID())})
	}
	c.Networks = networks
	return refusals
}

func sorted(pods []string) []string {
	return slices.Sorted(slices.Values(pods))
}
