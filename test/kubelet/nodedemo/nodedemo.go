package nodedemo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/contivpp/memif-agent/test/kit/vppstate"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

const (
	// values are the chart's values the demo installs it with: the agent
	// next to the node's VPP (the chart's ci/vpp-values.yaml, which
	// k8s/vpp renders).
	values = memifnode.ChartDir + "/ci/vpp-values.yaml"
	// vppRunDir is VPP's run directory on the node, with the API socket
	// the values give the agent.
	vppRunDir = memifnode.VPPRunDir
	// bridgeDomain is the values' l2 default network (networks.conf),
	// the bridge domain of the testpmd pods.
	bridgeDomain = "pods"
)

// Options configure Run.
type Options struct {
	// BinDir holds memifctl (make build).
	BinDir string
	// Pods is how many memif pods to run: the first sends, the others
	// receive; at least 2.
	Pods int
	// StepTimeout bounds each waiting step.
	StepTimeout time.Duration
	// Runtime is the node's runtime (default containerd 2.x).
	Runtime cluster.Runtime
	// Nodes is how many nodes the cluster has (default 1); each added
	// node runs its own VPP and agent (nodes.go).
	Nodes int
	Out   io.Writer
}

// demoPod is one memif pod with its memif as VPP holds it.
type demoPod struct {
	name, mode string
	link       memifnode.Link
	memif      *vppstate.Memif
}

// Run runs the demo and tears everything down before it returns.
func Run(ctx context.Context, opts Options) (err error) {
	if opts.Pods < 2 {
		return fmt.Errorf("the demo needs at least 2 pods (one sends, the others receive), got %d", opts.Pods)
	}
	r := reporter{out: opts.Out}
	c, err := cluster.Start(ctx, cluster.Options{Runtime: opts.Runtime, Nodes: opts.Nodes, Progress: prefixWriter{r, "cluster"}, OwnSignals: true})
	if err != nil {
		return err
	}
	defer func() {
		r.step("teardown", "stopping the cluster and removing its work dir")
		err = errors.Join(err, c.Stop())
	}()
	versions := c.Versions()
	r.step("peers", "kubernetes %s, etcd %s, %s, runc %s", versions["kubernetes"], versions["etcd"], versions["runtime"], versions["runc"])

	plugins, deploy, err := crossNodeSetup(r, c, memifnode.Options{BinDir: opts.BinDir, Values: []string{values}, Progress: func(f string, a ...any) { r.step("deploy", f, a...) }})
	if err != nil {
		return err
	}
	sw, err := memifnode.StartNodeVPP(ctx, c, plugins...)
	if err != nil {
		return err
	}
	defer func() {
		r.step("teardown", "stopping VPP")
		err = errors.Join(err, sw.Stop())
	}()
	r.step("vswitch", "VPP %s on the node: API socket %s/api.sock, memif plugin and %s, no DPDK, no hugepages (scripts/vpp.sh, pid %d)",
		sw.Version, vppRunDir, strings.Join(plugins, ", "), sw.VPP.Pid())
	added, stopAdded, err := startAddedVPPs(ctx, r, c, plugins)
	if err != nil {
		return err
	}
	defer func() {
		if len(added) > 0 {
			r.step("teardown", "stopping the added nodes' VPPs")
		}
		err = errors.Join(err, stopAdded())
	}()

	n, err := memifnode.Deploy(ctx, c, deploy)
	if err != nil {
		return err
	}
	if len(added) > 0 {
		// The agents talk to the API server (networks across nodes).
		if err := n.ReachAPIServer(ctx); err != nil {
			return err
		}
	}
	if err := n.JoinNodes(ctx); err != nil {
		return err
	}
	if err := waitFor(ctx, opts.StepTimeout, func() error { return n.DaemonSetReadyOnAll(ctx) }); err != nil {
		return fmt.Errorf("daemonset memif-agent never became Ready: %w", err)
	}
	var allocatable int64
	if err := waitFor(ctx, opts.StepTimeout, func() error {
		a, _, err := n.Allocatable(ctx)
		allocatable = a
		if err == nil && a == 0 {
			err = errors.New("node has no contivpp.io/memif allocatable yet")
		}
		return err
	}); err != nil {
		return err
	}
	r.step("agent", "daemonset memif-agent Ready, programming VPP through %s/api.sock; node %s allocatable contivpp.io/memif: %d", vppRunDir, cluster.NodeName, allocatable)
	if err := r.networks(ctx, n); err != nil {
		return err
	}
	if len(added) > 0 {
		if err := waitShares(ctx, r, c, n, opts.StepTimeout); err != nil {
			return err
		}
	}

	pods := make([]*demoPod, opts.Pods)
	for i := range pods {
		pods[i] = &demoPod{name: fmt.Sprintf("memif-%c", 'a'+i), mode: "rxonly"}
		if i == 0 {
			pods[i].mode = "txonly"
		}
		if _, err := n.CreatePod(ctx, onFirstNode(memifnode.MemifPodForwarding("default", pods[i].name, pods[i].mode))); err != nil {
			return err
		}
	}
	for _, p := range pods {
		if err := waitFor(ctx, opts.StepTimeout, func() error { _, err := n.PodRunning(ctx, "default", p.name); return err }); err != nil {
			return err
		}
		if p.link, err = n.PodLink(ctx, "default", p.name); err != nil {
			return err
		}
		stepCtx, cancel := context.WithTimeout(ctx, opts.StepTimeout)
		p.memif, err = sw.State.WaitMemif(stepCtx, p.link.Allocation.HostSocket)
		cancel()
		if err != nil {
			return fmt.Errorf("pod %s: %w", p.name, err)
		}
		r.step("pod", "%s Running (testpmd %s): MEMIF_SOCKET=%s, secret %d chars, %s mounted; allocation %s, device %s; VPP memif %s (%s) master on %s",
			p.name, p.mode, p.link.Socket, len(p.link.Secret), filepath.Dir(p.link.Socket), p.link.Allocation.AllocationID,
			strings.Join(p.link.Allocation.DeviceIDs, ","), p.memif.Name, p.memif.Tag, p.link.Allocation.HostSocket)
	}
	if err := r.show(ctx, c, n); err != nil {
		return err
	}

	for _, p := range pods {
		stepCtx, cancel := context.WithTimeout(ctx, opts.StepTimeout)
		err := sw.State.WaitLinkUp(stepCtx, p.memif)
		cancel()
		if err != nil {
			return fmt.Errorf("pod %s: %w", p.name, err)
		}
	}
	bd, err := sw.State.BridgeDomain(ctx, bridgeDomain)
	if err != nil {
		return err
	}
	// On two nodes or more, the bridge domain holds a VXLAN tunnel to
	// each other node too.
	if bd == nil || len(bd.Members) != len(pods)+len(added) || slices.ContainsFunc(pods, func(p *demoPod) bool { return !slices.Contains(bd.Members, p.memif.SwIfIndex) }) {
		return fmt.Errorf("VPP's bridge domain %q is %+v, want the %d pod memifs and a VXLAN tunnel to each of the %d other nodes in it", bridgeDomain, bd, len(pods), len(added))
	}
	in := fmt.Sprintf("all %d in bridge domain %s (id %d)", len(pods), bridgeDomain, bd.ID)
	if len(added) > 0 {
		in += fmt.Sprintf(", with a VXLAN tunnel to each of the %d other nodes", len(added))
	}
	r.step("vswitch", "every pod's memif link is up in VPP, %s", in)
	if err := r.vppctl(ctx, sw, "show memif", fmt.Sprintf("show bridge-domain %d detail", bd.ID)); err != nil {
		return err
	}

	// The receivers count what the sender sent through VPP, and a rate
	// over their last print.
	for _, p := range pods[1:] {
		if err := waitFor(ctx, opts.StepTimeout, func() error { return receiving(ctx, n, p.name) }); err != nil {
			return fmt.Errorf("pod %s: nothing from %s through VPP: %w", p.name, pods[0].name, err)
		}
	}
	rows, err := trafficRows(ctx, n, sw, pods)
	if err != nil {
		return err
	}
	r.step("traffic", "%s sends, the others receive through VPP's bridge domain %s; VPP's counters of each memif and what each receiving pod's testpmd counted (its log):\n%s", pods[0].name, bridgeDomain, table(rows))
	if err := r.vppctl(ctx, sw, "show interface"); err != nil {
		return err
	}

	if err := runL3(ctx, r, c, n, sw, opts.StepTimeout); err != nil {
		return err
	}
	if err := runAddedNodes(ctx, r, n, added, opts.StepTimeout); err != nil {
		return err
	}
	if len(added) > 0 {
		if err := runAcrossNodes(ctx, r, c, n, sw, added, opts.StepTimeout); err != nil {
			return err
		}
	}

	gone := pods[len(pods)-1]
	if err := n.DeletePod(ctx, "default", gone.name); err != nil {
		return err
	}
	if err := waitFor(ctx, opts.StepTimeout, func() error { return n.Released(ctx, gone.link.Allocation) }); err != nil {
		return fmt.Errorf("pod %s deleted, but: %w", gone.name, err)
	}
	// The agent deletes the VPP side before it removes the directory.
	if memif, err := sw.State.FindMemif(ctx, gone.link.Allocation.HostSocket); err != nil || memif != nil {
		return fmt.Errorf("pod %s released, but VPP still holds memif %+v on %s (%v)", gone.name, memif, gone.link.Allocation.HostSocket, err)
	}
	if left, err := sw.State.HasSocket(ctx, gone.link.Allocation.HostSocket); err != nil || left {
		return fmt.Errorf("pod %s released, but VPP still lists socket %s (%v)", gone.name, gone.link.Allocation.HostSocket, err)
	}
	r.step("delete", "pod %s deleted: VPP memif %s and its socket gone; allocation %s released, %s removed",
		gone.name, gone.memif.Name, gone.link.Allocation.AllocationID, filepath.Dir(gone.link.Allocation.HostSocket))

	rest := pods[:len(pods)-1]
	for _, p := range rest {
		if up, err := sw.State.LinkUp(ctx, p.memif); err != nil || !up {
			return fmt.Errorf("pod %s: VPP memif %s down after deleting %s (%v)", p.name, p.memif.Name, gone.name, err)
		}
	}
	still := fmt.Sprintf("the other %d links stay up in VPP", len(rest))
	for _, p := range rest[1:] {
		before, err := n.PodStats(ctx, "default", p.name)
		if err != nil {
			return err
		}
		if err := waitFor(ctx, opts.StepTimeout, func() error { return received(ctx, n, p.name, before.RxPackets) }); err != nil {
			return fmt.Errorf("pod %s: no more packets after deleting %s: %w", p.name, gone.name, err)
		}
	}
	if len(rest) > 1 {
		still += "; " + pods[0].name + "'s packets still reach " + names(rest[1:])
	}
	r.step("delete", "%s", still)
	if err := r.vppctl(ctx, sw, "show interface"); err != nil {
		return err
	}
	return r.show(ctx, c, n)
}

// received returns nil once pod's testpmd has counted more than after
// received packets.
func received(ctx context.Context, n *memifnode.Node, pod string, after uint64) error {
	stats, err := n.PodStats(ctx, "default", pod)
	if err == nil && stats.RxPackets <= after {
		err = fmt.Errorf("pod %s's testpmd counts %d received packets", pod, stats.RxPackets)
	}
	return err
}

// receiving returns nil once pod's testpmd has printed a receive rate.
func receiving(ctx context.Context, n *memifnode.Node, pod string) error {
	stats, err := n.PodStats(ctx, "default", pod)
	if err == nil && (stats.RxPackets == 0 || stats.RxPPS == 0) {
		err = fmt.Errorf("pod %s's testpmd counts %d received packets, %d per second", pod, stats.RxPackets, stats.RxPPS)
	}
	return err
}

func names(pods []*demoPod) string {
	var list []string
	for _, p := range pods {
		list = append(list, p.name)
	}
	return strings.Join(list, ", ")
}

// row is one pod's line of the traffic table.
type row struct {
	pod     *demoPod
	vpp     vppstate.Counters
	podRx   uint64
	podRxPS uint64
}

func trafficRows(ctx context.Context, n *memifnode.Node, sw *memifnode.NodeVPP, pods []*demoPod) ([]row, error) {
	var rows []row
	for _, p := range pods {
		counters, err := sw.State.Counters(ctx, p.memif)
		if err != nil {
			return nil, err
		}
		r := row{pod: p, vpp: counters}
		if p.mode == "rxonly" {
			stats, err := n.PodStats(ctx, "default", p.name)
			if err != nil {
				return nil, err
			}
			r.podRx, r.podRxPS = stats.RxPackets, stats.RxPPS
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func table(rows []row) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tTESTPMD\tVPP MEMIF\tLINK\tVPP RX\tVPP TX\tVPP DROPS\tPOD RX\tPOD RX PPS")
	for _, r := range rows {
		podRx, podRxPS := "-", "-" // the sender's testpmd receives nothing
		if r.pod.mode == "rxonly" {
			podRx, podRxPS = fmt.Sprint(r.podRx), fmt.Sprint(r.podRxPS)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\tup\t%d\t%d\t%d\t%s\t%s\n", r.pod.name, r.pod.mode, r.pod.memif.Name,
			r.vpp.RxPackets, r.vpp.TxPackets, r.vpp.Drops, podRx, podRxPS)
	}
	w.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// waitFor calls check every 200ms until it returns nil, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// reporter prints one line per step.
type reporter struct{ out io.Writer }

func (r reporter) step(phase, format string, args ...any) {
	fmt.Fprintf(r.out, "%-9s %s\n", phase, fmt.Sprintf(format, args...))
}

// show prints what kubectl and memifctl show.
func (r reporter) show(ctx context.Context, c *cluster.Cluster, n *memifnode.Node) error {
	pods, err := c.Kubectl(ctx, "get", "pods", "-A", "-o", "wide")
	if err != nil {
		return err
	}
	r.step("kubectl", "get pods -A -o wide:\n%s", strings.TrimRight(pods, "\n"))
	list, err := n.MemifctlText(ctx, "list")
	if err != nil {
		return err
	}
	r.step("memifctl", "list:\n%s", strings.TrimRight(list, "\n"))
	return nil
}

// vppctl prints what vppctl shows for each command.
func (r reporter) vppctl(ctx context.Context, sw *memifnode.NodeVPP, commands ...string) error {
	for _, command := range commands {
		out, err := sw.VPP.RunCLI(ctx, strings.Fields(command)...)
		if err != nil {
			return err
		}
		r.step("vppctl", "%s:\n%s", command, strings.TrimRight(out, "\n"))
	}
	return nil
}

// prefixWriter turns the cluster's progress lines into steps.
type prefixWriter struct {
	r     reporter
	phase string
}

func (w prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.r.step(w.phase, "%s", strings.TrimPrefix(line, "cluster: "))
	}
	return len(p), nil
}
