package nodedemo

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// l3Network is the overlay's l3 network the VPP pods ask for.
const l3Network = "red"

// cnfPods run VPP as the memif slave, in l3Network.
var cnfPods = []string{"cnf-a", "cnf-b"}

// networks prints the networks.conf the agent runs with.
func (r reporter) networks(ctx context.Context, n *memifnode.Node) error {
	conf, err := networksConf(ctx, n)
	if err != nil {
		return err
	}
	var lines []string
	for _, network := range conf.Networks {
		line := fmt.Sprintf("%s: %s", network.Name, network.Type)
		if network.Type == netconf.L3 {
			line += fmt.Sprintf(" %s, VRF table %d", network.Subnet, network.TableID())
		} else {
			line += ", a bridge domain"
		}
		if network.Name == conf.DefaultNetwork {
			line += " (default: pods that name no network)"
		}
		lines = append(lines, line)
	}
	r.step("networks", "networks.conf of ConfigMap %s/%s: %s", memifnode.Namespace, memifnode.ConfigMap, strings.Join(lines, "; "))
	return nil
}

// networksConf reads networks.conf from the agent's ConfigMap.
func networksConf(ctx context.Context, n *memifnode.Node) (netconf.Config, error) {
	cm, err := n.Client().CoreV1().ConfigMaps(memifnode.Namespace).Get(ctx, memifnode.ConfigMap, metav1.GetOptions{})
	if err != nil {
		return netconf.Config{}, err
	}
	return netconf.Decode([]byte(cm.Data["networks.conf"]))
}

// runL3 runs the VPP pods in l3Network: each gets an address and its
// gateway in memif.json, configures its VPP from it, and pings its gateway
// (the node's VPP) and the other pod through the node's VPP.
func runL3(ctx context.Context, r reporter, c *cluster.Cluster, n *memifnode.Node, sw *memifnode.NodeVPP, timeout time.Duration) error {
	if err := memifnode.ImportVPPImageOnAll(ctx, c); err != nil {
		return err
	}
	r.step("image", "imported %s: VPP's runtime from scripts/vpp.sh and an entrypoint that configures VPP as memif slave from /run/vpp/memif.json", memifnode.VPPImage)
	annotation := fmt.Sprintf(`[{"network": %q}]`, l3Network)
	for _, name := range cnfPods {
		if _, err := n.CreatePod(ctx, onFirstNode(memifnode.VPPPod("default", name, annotation))); err != nil {
			return err
		}
	}
	memifs := map[string]memifnode.PodMemif{}
	for _, name := range cnfPods {
		memif, err := waitCNFOn(ctx, c, n, c.FirstNode(), name, timeout)
		if err != nil {
			return err
		}
		memifs[name] = memif
		iface := memif.File.Interfaces[0]
		held, err := sw.State.FindMemif(ctx, memif.Allocation.HostSocket)
		if err != nil || held == nil {
			return fmt.Errorf("pod %s: VPP holds no memif on %s (%v)", name, memif.Allocation.HostSocket, err)
		}
		r.step("pod", "%s Running (VPP as memif slave), memif.contivpp.io/networks: %s; memif.json: network %s, %s mode, %s via %s; VPP memif %s (%s) master, connected",
			name, annotation, iface.Network, iface.Mode, iface.IPs[0], iface.Gateway[0], held.Name, held.Tag)
	}
	r.step("memif.json", "what %s reads at /run/vpp/memif.json (the secret is in MEMIF_SECRET only):\n%s", cnfPods[0], strings.TrimRight(string(memifs[cnfPods[0]].JSON), "\n"))

	a, b := memifs[cnfPods[0]].File.Interfaces[0], memifs[cnfPods[1]].File.Interfaces[0]
	if err := r.pings(ctx, c, timeout, []ping{
		{cnfPods[0], a.Gateway[0].String(), "its gateway, the node's VPP"},
		{cnfPods[1], b.Gateway[0].String(), "its gateway, the node's VPP"},
		{cnfPods[0], b.IPs[0].Addr().String(), cnfPods[1] + " through the node's VPP"},
		{cnfPods[1], a.IPs[0].Addr().String(), cnfPods[0] + " through the node's VPP"},
	}); err != nil {
		return err
	}
	conf, err := networksConf(ctx, n)
	if err != nil {
		return err
	}
	red, ok := conf.Network(l3Network)
	if !ok {
		return fmt.Errorf("networks.conf has no network %s", l3Network)
	}
	return r.vppctl(ctx, sw, "show interface address", fmt.Sprintf("show ip fib table %d %s", red.TableID(), red.Subnet))
}

// ping is one ping of the demo: from a VPP pod to target, what it is.
type ping struct{ from, target, what string }

// pings runs each ping from its pod's VPP until all its packets come
// back, and reports it.
func (r reporter) pings(ctx context.Context, c *cluster.Cluster, timeout time.Duration, pings []ping) error {
	for _, p := range pings {
		cli := memifnode.PodVPP(c, "default", p.from)
		var sent, received int
		if err := waitFor(ctx, timeout, func() error {
			var err error
			sent, received, err = cli.Ping(ctx, p.target)
			if err == nil && (sent != vppcnf.PingCount || received != sent) {
				err = fmt.Errorf("%s pings %s: %d sent, %d received", p.from, p.target, sent, received)
			}
			return err
		}); err != nil {
			return err
		}
		r.step("ping", "%s -> %s (%s): %d sent, %d received", p.from, p.target, p.what, sent, received)
	}
	return nil
}
