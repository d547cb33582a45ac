package multinode

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// redTable is the VRF of l3 network red (networks-values.yaml sets no id).
var redTable = netconf.DeriveID("red")

// TestSpanThroughNodeLifecycle: on two nodes joined by an underlay, with
// VPP pods in red (l3) and lab (l2) on both, in order on one cluster:
// node B's agent restarts, its VPP restarts, and node B is removed.
func TestSpanThroughNodeLifecycle(t *testing.T) {
	ctx := t.Context()
	l := &lifecycle{spanningNodes: startSpanningNodes(ctx, t)}
	a, b := l.names[0], l.names[1]
	l.runVPPPods(ctx, t, []vppPod{{"red-a", a, "red"}, {"red-b", b, "red"}, {"lab-a", a, "lab"}, {"lab-b", b, "lab"}})
	for i, name := range []string{"lab-a", "lab-b"} {
		if _, err := memifnode.PodVPP(l.c, namespace, name).Run(ctx, "set interface ip address memif1/0 "+labAddresses[i]); err != nil {
			t.Fatal(err)
		}
	}
	l.pings = [][2]string{
		{"red-a", podAddress(ctx, t, l.c, "red-b")}, {"red-b", podAddress(ctx, t, l.c, "red-a")},
		{"lab-a", strings.Split(labAddresses[1], "/")[0]}, {"lab-b", strings.Split(labAddresses[0], "/")[0]},
	}
	l.wantTraffic(t)
	t.Run("node B's agent restarts: traffic resumes, no VPP change on either node", l.agentRestart)
	t.Run("node B's VPP restarts: its tunnels and routes come back, traffic resumes", l.vppRestart)
	t.Run("node B removed: node A's VPP drops its tunnels and routes, its shares are freed", l.nodeRemoved)
}

// lifecycle is the cluster TestSpanThroughNodeLifecycle changes.
type lifecycle struct {
	*spanningNodes
	// pings are the pods' pings across the nodes: from a pod, to an
	// address.
	pings [][2]string
}

// wantTraffic waits until every ping across the nodes is answered.
func (l *lifecycle) wantTraffic(t *testing.T) {
	t.Helper()
	for _, ping := range l.pings {
		wantPing(t, l.c, ping[0], ping[1])
	}
}

// agentRestart deletes node B's agent pod; the DaemonSet's next one comes
// up with the span the API server holds: neither node's VPP is sent a
// change, and the traffic across the nodes goes on.
func (l *lifecycle) agentRestart(t *testing.T) {
	ctx := t.Context()
	for _, vswitch := range l.vpps {
		if err := vswitch.TraceAPI(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b := l.names[1]
	old, err := l.agents.AgentPodOn(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.agents.DeletePod(ctx, memifnode.Namespace, old.Name); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "a new agent pod Ready on node "+b, func() error {
		pod, err := l.agents.AgentPodOn(ctx, b)
		switch {
		case err != nil:
			return err
		case pod.UID == old.UID:
			return fmt.Errorf("agent pod %s is still the old one", pod.Name)
		case !podReady(pod):
			return fmt.Errorf("agent pod %s is not Ready: %v", pod.Name, pod.Status.Conditions)
		}
		return nil
	})
	// The new agent's resync dumps what VPP holds: the trace holds what it
	// sent.
	poll.Until(t, waitLimit, "the new agent's resync read node B's VPP", func() error {
		_, received, err := l.vpps[1].APIChanges(ctx)
		if err == nil && received == 0 {
			err = fmt.Errorf("node B's VPP received no API message since the agent was deleted")
		}
		return err
	})
	l.wantTraffic(t)
	for i, vswitch := range l.vpps {
		changes, received, err := vswitch.APIChanges(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) > 0 {
			t.Errorf("node %s's VPP was changed while node B's agent restarted: %d of the %d API messages it received are not reads: %s",
				l.names[i], len(changes), received, strings.Join(changes, ", "))
		}
		t.Logf("node %s's VPP received %d API messages while node B's agent restarted, %d changes", l.names[i], received, len(changes))
	}
}

func podReady(pod *v1.Pod) bool {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == v1.PodReady {
			return condition.Status == v1.ConditionTrue
		}
	}
	return false
}

// vppRestart kills node B's VPP and starts it again, empty: node B's
// agent puts back its tunnels to node A and its route to node A's share
// of red, and the traffic across the nodes resumes.
func (l *lifecycle) vppRestart(t *testing.T) {
	ctx := t.Context()
	vswitch := l.vpps[1]
	aShare := l.share(t, l.names[0])
	before := tunnels(t, vswitch)
	if len(before) == 0 || !hasRoute(t, vswitch, aShare) {
		t.Fatalf("before the restart node B's VPP holds tunnels %v, route to node A's share %s: %t; want both", before, aShare, hasRoute(t, vswitch, aShare))
	}
	vswitch.Kill(t)
	vswitch.StartAgain(ctx, t)
	poll.Until(t, waitLimit, "node B's tunnels and route to node A's share back", func() error {
		if now := tunnels(t, vswitch); !slices.Equal(now, before) {
			return fmt.Errorf("tunnels %v, want %v", now, before)
		}
		if !hasRoute(t, vswitch, aShare) {
			return fmt.Errorf("no route to node A's share %s in red's table %d", aShare, redTable)
		}
		return nil
	})
	l.wantTraffic(t)
}

// nodeRemoved removes node B (kubelet stopped, Node deleted): node A's
// VPP drops its tunnels to node B and its route to node B's share of
// red, and node B's shares' Leases are deleted, the shares free.
func (l *lifecycle) nodeRemoved(t *testing.T) {
	ctx := t.Context()
	a, b := l.vpps[0], l.names[1]
	bShare := l.share(t, b)
	peer := netip.MustParsePrefix(memifnode.UnderlayAddress(1)).Addr()
	if !slices.ContainsFunc(tunnels(t, a), func(tn tunnel) bool { return tn.dst == peer }) || !hasRoute(t, a, bShare) {
		t.Fatalf("before the removal node A's VPP holds tunnels %v, route to node B's share %s: %t; want a tunnel to %s and the route",
			tunnels(t, a), bShare, hasRoute(t, a, bShare), peer)
	}
	leases := l.leasesOf(t, b)
	for _, node := range l.c.Nodes() {
		if node.Name() == b {
			if err := node.Remove(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	poll.Until(t, waitLimit, "node A's VPP without node B's tunnels and route", func() error {
		if held := slices.DeleteFunc(tunnels(t, a), func(tn tunnel) bool { return tn.dst != peer }); len(held) > 0 {
			return fmt.Errorf("tunnels to node B %v", held)
		}
		if hasRoute(t, a, bShare) {
			return fmt.Errorf("route to node B's share %s in red's table %d", bShare, redTable)
		}
		return nil
	})
	poll.Until(t, waitLimit, "node B's shares' Leases deleted", func() error {
		for _, name := range leases {
			_, err := l.agents.Client().CoordinationV1().Leases(memifnode.Namespace).Get(ctx, name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("lease %s: %v, want it gone", name, err)
			}
		}
		return nil
	})
}

// share is node's share of red, from its Lease.
func (l *lifecycle) share(t *testing.T, node string) netip.Prefix {
	t.Helper()
	list, err := l.agents.Client().CoordinationV1().Leases(memifnode.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: shares.LabelNetwork + "=red"})
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range list.Items {
		if ptr.Deref(lease.Spec.HolderIdentity, "") == node {
			return netip.MustParsePrefix(lease.Annotations[shares.AnnotationShare])
		}
	}
	t.Fatalf("node %s holds no share of red among %d Leases", node, len(list.Items))
	return netip.Prefix{}
}

// leasesOf are the names of the shares' Leases node holds.
func (l *lifecycle) leasesOf(t *testing.T, node string) []string {
	t.Helper()
	list, err := l.agents.Client().CoordinationV1().Leases(memifnode.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: shares.LabelNetwork})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lease := range list.Items {
		if ptr.Deref(lease.Spec.HolderIdentity, "") == node {
			names = append(names, lease.Name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("node %s holds no share's Lease among %d", node, len(list.Items))
	}
	return names
}

// tunnel is a VXLAN tunnel as `show vxlan tunnel` prints it.
type tunnel struct {
	src, dst netip.Addr
	vni      string
}

func (tn tunnel) String() string { return fmt.Sprintf("%s->%s vni %s", tn.src, tn.dst, tn.vni) }

var vxlanTunnel = regexp.MustCompile(`src (\S+) dst (\S+) .*\bvni (\d+)`)

// tunnels are the VXLAN tunnels vswitch holds, sorted.
func tunnels(t *testing.T, vswitch *memifnode.NodeVPP) []tunnel {
	t.Helper()
	out, err := vswitch.CLI().Run(t.Context(), "show vxlan tunnel")
	if err != nil {
		t.Fatal(err)
	}
	var held []tunnel
	for _, m := range vxlanTunnel.FindAllStringSubmatch(out, -1) {
		src, errSrc := netip.ParseAddr(m[1])
		dst, errDst := netip.ParseAddr(m[2])
		if errSrc != nil || errDst != nil {
			t.Fatalf("show vxlan tunnel: line %q names no addresses", m[0])
		}
		held = append(held, tunnel{src: src, dst: dst, vni: m[3]})
	}
	slices.SortFunc(held, func(x, y tunnel) int { return strings.Compare(x.String(), y.String()) })
	return held
}

// hasRoute tells whether red's table in vswitch routes prefix.
func hasRoute(t *testing.T, vswitch *memifnode.NodeVPP, prefix netip.Prefix) bool {
	t.Helper()
	out, err := vswitch.CLI().Run(t.Context(), fmt.Sprintf("show ip fib table %d", redTable))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix.String()) + `(\s|$)`).MatchString(out)
}
