package cluster

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// The underlay between the nodes, for networks that span nodes: a Linux
// bridge on the host and, per node joined, a veth pair with one end in
// the bridge and the other in the node's network namespace (the host's
// for the first node, so the ends are named per node), which the node's
// VPP takes with af_packet. The bridge is named after the pods' bridge
// (a prefix of the work dir's name, unique per cluster), and goes, with
// the veths, when the cluster stops.

// underlayBridge names the cluster's underlay bridge.
func (c *Cluster) underlayBridge() string { return "u" + c.bridge[1:] }

// UnderlayLink names node k's end of its underlay veth (k: its place in
// AllNodes), at most 15 bytes: a Linux interface name.
func (c *Cluster) UnderlayLink(k int) string { return underlayEnd(c.bridge, "n", k) }

func underlayEnd(bridge, side string, k int) string {
	suffix := side + strconv.Itoa(k)
	return "v" + bridge[1:min(len(bridge), 15-len(suffix))] + suffix
}

// JoinUnderlay connects node to the underlay (making the bridge first)
// and returns the name of its end, up in the node's network namespace
// without an address: VPP holds the node's underlay address.
func (c *Cluster) JoinUnderlay(node NodeHost) (string, error) {
	k := slices.IndexFunc(c.AllNodes(), func(n NodeHost) bool { return n.Name() == node.Name() })
	if k < 0 {
		return "", fmt.Errorf("cluster: join the underlay: no node %s", node.Name())
	}
	bridge := c.underlayBridge()
	if exec.Command("ip", "link", "show", bridge).Run() != nil {
		for _, args := range [][]string{{"link", "add", bridge, "type", "bridge"}, {"link", "set", bridge, "up"}} {
			if err := runIP(nil, args); err != nil {
				return "", fmt.Errorf("cluster: the underlay bridge: %w", err)
			}
		}
	}
	host, end := underlayEnd(c.bridge, "h", k), c.UnderlayLink(k)
	add := []string{"link", "add", host, "type", "veth", "peer", "name", end}
	var inside []string
	if added, ok := node.(*Node); ok {
		add = append(add, "netns", strconv.Itoa(added.net.holder.Pid()))
		inside = added.net.argv()
	}
	for _, step := range []struct {
		prefix, args []string
	}{{nil, add}, {nil, []string{"link", "set", host, "master", bridge}}, {nil, []string{"link", "set", host, "up"}}, {inside, []string{"link", "set", end, "up"}}} {
		if err := runIP(step.prefix, step.args); err != nil {
			return "", fmt.Errorf("cluster: node %s's underlay link: %w", node.Name(), err)
		}
	}
	return end, nil
}

// removeUnderlay deletes the underlay bridge and the host's ends of the
// veths (which takes the nodes' ends with them).
func (c *Cluster) removeUnderlay() error {
	out, err := exec.Command("ip", "-o", "link", "show", "master", c.underlayBridge()).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "does not exist") || strings.Contains(string(out), "Cannot find device") {
			return nil
		}
		return fmt.Errorf("list the underlay bridge %s's links: %w: %s", c.underlayBridge(), err, out)
	}
	var errs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		link, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
		if out, err := exec.Command("ip", "link", "delete", link).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("delete %s: %v: %s", link, err, out))
		}
	}
	if out, err := exec.Command("ip", "link", "delete", c.underlayBridge()).CombinedOutput(); err != nil {
		errs = append(errs, fmt.Sprintf("delete %s: %v: %s", c.underlayBridge(), err, out))
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove the underlay: %s", strings.Join(errs, "; "))
	}
	return nil
}
