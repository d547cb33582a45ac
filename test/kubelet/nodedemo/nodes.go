package nodedemo

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// The demo's added nodes (Options.Nodes above 1): each runs its own VPP
// and its own agent from the DaemonSet; the l2 and l3 pods stay on the
// first node, one testpmd pod on each added node gets its memif from
// that node's agent, held by that node's VPP, and one VPP pod on each
// added node pings an l3 pod of the first node across the underlay
// (crossnode.go).

// addedVPP is an added node with its VPP.
type addedVPP struct {
	node *cluster.Node
	sw   *memifnode.NodeVPP
}

// onFirstNode pins pod to the first node, whose VPP the l2 and l3 steps
// read.
func onFirstNode(pod *v1.Pod) *v1.Pod {
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": cluster.NodeName}
	return pod
}

// startAddedVPPs starts VPP with plugins on every added node; stop stops
// them all.
func startAddedVPPs(ctx context.Context, r reporter, c *cluster.Cluster, plugins []string) (added []addedVPP, stop func() error, err error) {
	stop = func() error {
		var errs []error
		for _, a := range added {
			errs = append(errs, a.sw.Stop())
		}
		return errors.Join(errs...)
	}
	for _, node := range c.Nodes() {
		sw, err := memifnode.StartNodeVPPOn(ctx, node, plugins...)
		if err != nil {
			return nil, nil, errors.Join(err, stop())
		}
		added = append(added, addedVPP{node: node, sw: sw})
		r.step("vswitch", "VPP %s on node %s (its own mount and network namespace, address %s; pid %d)", sw.Version, node.Name(), node.IP(), sw.VPP.Pid())
	}
	return added, stop, nil
}

// runAddedNodes shows each added node's agent: a testpmd pod pinned there
// gets a memif from it, which that node's VPP holds, link up.
func runAddedNodes(ctx context.Context, r reporter, n *memifnode.Node, added []addedVPP, timeout time.Duration) error {
	for _, a := range added {
		name := "memif-on-" + a.node.Name()
		pod := memifnode.MemifPodForwarding("default", name, "txonly")
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": a.node.Name()}
		if _, err := n.CreatePod(ctx, pod); err != nil {
			return err
		}
		if err := waitFor(ctx, timeout, func() error { _, err := n.PodRunning(ctx, "default", name); return err }); err != nil {
			return err
		}
		agent, err := n.AgentPodOn(ctx, a.node.Name())
		if err != nil {
			return err
		}
		var allocation memifnode.Allocation
		if err := waitFor(ctx, timeout, func() error {
			list, err := n.MemifctlOn(ctx, a.node, "list")
			if err != nil {
				return err
			}
			for _, held := range list {
				if held.PodName == name {
					allocation = held
					return nil
				}
			}
			return fmt.Errorf("node %s's agent holds no allocation of pod %s (%d allocations)", a.node.Name(), name, len(list))
		}); err != nil {
			return err
		}
		stepCtx, cancel := context.WithTimeout(ctx, timeout)
		memif, err := a.sw.State.WaitMemif(stepCtx, allocation.HostSocket)
		if err == nil {
			err = a.sw.State.WaitLinkUp(stepCtx, memif)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("pod %s on node %s: %w", name, a.node.Name(), err)
		}
		r.step("node", "%s: agent pod %s; pod %s Running there, allocation %s (device %v) from that node's agent, VPP memif %s on %s link up in that node's VPP",
			a.node.Name(), agent.Name, name, allocation.AllocationID, allocation.DeviceIDs, memif.Name, allocation.HostSocket)
	}
	return nil
}
