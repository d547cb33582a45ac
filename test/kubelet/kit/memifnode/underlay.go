package memifnode

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// UnderlayPlugins are the node VPP's plugins for networks that span
// nodes (af_packet on the node's underlay link, VXLAN), and ping.
var UnderlayPlugins = []string{"af_packet", "vxlan", "ping"}

// UnderlayAddress is the underlay address of the VPP of node k (its place
// in cluster.AllNodes): 192.168.240.<k+1>/24. The underlay is a bridge of
// the cluster's own, so clusters side by side do not meet.
func UnderlayAddress(k int) string { return fmt.Sprintf("192.168.240.%d/24", k+1) }

// JoinUnderlay connects every node of c to the cluster's underlay
// (cluster.JoinUnderlay) and returns crossnode.conf's keys that give each
// node's agent its link and UnderlayAddress, for Options.ConfigKeys; the
// chart's crossNode.enabled gives the agents what they need of the API
// server.
func JoinUnderlay(c *cluster.Cluster) (map[string]string, error) {
	nodes := map[string]map[string]string{}
	for k, node := range c.AllNodes() {
		link, err := c.JoinUnderlay(node)
		if err != nil {
			return nil, fmt.Errorf("memifnode: %w", err)
		}
		nodes[node.Name()] = map[string]string{"underlay-interface": link, "underlay-address": UnderlayAddress(k)}
	}
	value, err := json.Marshal(nodes)
	if err != nil {
		return nil, err
	}
	return map[string]string{"nodes": string(value)}, nil
}

// ImportVPPImageOnAll imports the VPP pod image (ImportVPPImage) into
// every node of c.
func ImportVPPImageOnAll(ctx context.Context, c *cluster.Cluster) error {
	img, err := vppcnf.Image(VPPImage)
	if err != nil {
		return fmt.Errorf("memifnode: %w", err)
	}
	for _, node := range c.AllNodes() {
		if err := node.ImportOCIImage(ctx, img); err != nil {
			return fmt.Errorf("memifnode: import %s into node %s: %w", VPPImage, node.Name(), err)
		}
	}
	return nil
}
