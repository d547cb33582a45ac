package multinode

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/plugins/networks/underlay"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

const (
	// warmUp passes between a stream's start and the count, so that every
	// VPP on the path is in its steady forwarding loop.
	warmUp = time.Second
	// rateWindow is how long a receiver counts. VPP prints its runtime
	// statistics' time to a tenth of a second: 4 s keeps that within 1.3%.
	rateWindow = 4 * time.Second
	// spanPause is the pause between two looks at node A's VPP and node
	// B's agent while a peer comes up: the resolution of the times.
	spanPause = 20 * time.Millisecond
)

// BenchmarkCrossNodePodToPod measures IPv4 packets per second from a VPP
// pod on node A to a VPP pod on node B in l3 network red (node A's VPP,
// the VXLAN tunnel over the underlay, node B's VPP), and, as baseline,
// from the same pod to a VPP pod on node A in red (node A's VPP alone).
// The sender's VPP makes 64-byte UDP packets with its packet generator
// as fast as it can, a stream per receiver; each receiver counts what its
// memif received in its own VPP's runtime statistics (memif-input's
// vectors over the time since they were cleared), so the window is
// measured by VPP's clock, not across kubectl exec. The two paths take
// turns in each iteration, the first alternating: they share the sender
// and node A's VPP. Reported: medians of both in packets per second and
// the median of the iterations' ratios cross/same.
func BenchmarkCrossNodePodToPod(b *testing.B) {
	ctx := b.Context()
	s := startSpanningNodes(ctx, b)
	s.runVPPPods(ctx, b, []vppPod{
		{"sender", s.names[0], "red"},
		{"same-node", s.names[0], "red"},
		{"cross-node", s.names[1], "red"},
	})
	sender := memifnode.PodVPP(s.c, namespace, "sender")
	from := podAddress(ctx, b, s.c, "sender")
	for _, receiver := range []string{"same-node", "cross-node"} {
		to := podAddress(ctx, b, s.c, receiver)
		wantPing(b, s.c, "sender", to)
		if _, err := sender.Run(ctx, udpStream(receiver, from, to)); err != nil {
			b.Fatal(err)
		}
	}
	var cross, same, ratios []float64
	for i := 0; b.Loop(); i++ {
		order := []string{"cross-node", "same-node"}
		if i%2 == 1 {
			slices.Reverse(order)
		}
		rates := map[string]float64{}
		for _, receiver := range order {
			rates[receiver] = s.rate(ctx, b, sender, receiver)
		}
		cross, same = append(cross, rates["cross-node"]), append(same, rates["same-node"])
		ratios = append(ratios, rates["cross-node"]/rates["same-node"])
	}
	// What each node's VPP forwarded and dropped, to read the figures by
	// (go test -v): which VPP on the path held the packets back.
	for k, vswitch := range s.vpps {
		for _, show := range []string{"show errors", "show interface"} {
			out, err := vswitch.State.CLI(ctx, show)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("node %s's VPP, %s:\n%s", s.names[k], show, out)
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(cross), "cross-node-pps")
	b.ReportMetric(median(same), "same-node-pps")
	b.ReportMetric(median(ratios), "cross/same")
}

// udpStream is a packet generator stream named name of 64-byte IPv4 UDP
// packets from to to, handed to the IPv4 lookup: the pod's routes send
// them out of its memif. It starts disabled.
func udpStream(name, from, to string) string {
	return fmt.Sprintf("packet-generator new { name %s limit -1 size 64-64 node ip4-lookup data { UDP: %s -> %s UDP: 1234 -> 4321 incrementing 36 } }",
		name, from, to)
}

// rate runs the sender's stream to receiver and returns the packets per
// second receiver's memif received. A receiver that got none fails b:
// the path is broken, not slow.
func (s *spanningNodes) rate(ctx context.Context, b *testing.B, sender vppcnf.CLI, receiver string) float64 {
	b.Helper()
	rx := memifnode.PodVPP(s.c, namespace, receiver)
	run := func(cli vppcnf.CLI, command string) string {
		b.Helper()
		out, err := cli.Run(ctx, command)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	run(sender, "packet-generator enable-stream "+receiver)
	defer run(sender, "packet-generator disable-stream "+receiver)
	time.Sleep(warmUp)
	run(rx, "clear runtime")
	time.Sleep(rateWindow)
	packets, seconds, err := memifInput(run(rx, "show runtime"))
	if err == nil && packets == 0 {
		err = fmt.Errorf("pod %s's memif received no packet in %.1f s; its VPP's errors:\n%s", receiver, seconds, run(rx, "show errors"))
	}
	if err != nil {
		b.Fatal(err)
	}
	return packets / seconds
}

var runtimeTime = regexp.MustCompile(`(?m)^Time (\d+(?:\.\d+)?),`)

// memifInput reads VPP's show runtime: the vectors (packets) of node
// memif-input, summed over threads, and the seconds since the statistics
// were cleared.
func memifInput(runtime string) (packets, seconds float64, err error) {
	m := runtimeTime.FindStringSubmatch(runtime)
	if m == nil {
		return 0, 0, fmt.Errorf("VPP's show runtime printed no time: %q", runtime)
	}
	seconds, _ = strconv.ParseFloat(m[1], 64)
	if seconds <= 0 {
		return 0, 0, fmt.Errorf("VPP's show runtime counted for %s s", m[1])
	}
	found := false
	for _, line := range strings.Split(runtime, "\n") {
		fields := strings.Fields(line)
		// memif-input, its state (one word or two), then calls,
		// vectors, suspends, clocks and vectors per call.
		if len(fields) < 7 || fields[0] != "memif-input" {
			continue
		}
		vectors, err := strconv.ParseFloat(fields[len(fields)-4], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("VPP's show runtime, line %q: vectors: %w", line, err)
		}
		packets += vectors
		found = true
	}
	if !found {
		return 0, 0, fmt.Errorf("VPP's show runtime has no memif-input node: %q", runtime)
	}
	return packets, seconds, nil
}

// BenchmarkPeerTunnelUp measures how soon a node that joins is in the
// other node's VPP: from node B opted in (its agent's DaemonSet pod made,
// started), to node A's VPP holding its VXLAN tunnels to B and the route
// to B's share of red, beside the baseline from the same instant to B's
// agent Ready. Before each iteration, outside the timer, B is opted out
// and its underlay address annotation removed, until A's VPP holds none
// of B's tunnels and routes (B's share stays B's: its Lease stays). A
// pod of red on node A makes A's VPP reach the other nodes in red. Both
// are looked at every spanPause. Reported: medians of both in
// milliseconds and the median of the iterations' ratios peer/ready.
func BenchmarkPeerTunnelUp(b *testing.B) {
	ctx := b.Context()
	s := startSpanningNodes(ctx, b)
	// A node's VPP reaches the others only in the networks it has pods of.
	pod := memifPod("red-a")
	pod.Annotations = map[string]string{memifspec.AnnotationKey: `[{"network": "red"}]`}
	pod.Spec.NodeName = s.names[0]
	if _, err := s.agents.CreatePod(ctx, pod); err != nil {
		b.Fatal(err)
	}
	poll.Until(b, waitLimit, "pod red-a running", func() error {
		_, err := s.agents.PodRunning(ctx, namespace, pod.Name)
		return err
	})
	peer := peerOf(ctx, b, s)
	poll.Until(b, waitLimit, "node A's VPP holding node B's tunnels and route", func() error {
		var err error
		peer.tunnels, err = peer.inVPP(ctx)
		if err == nil && peer.tunnels == 0 {
			err = errors.New("no tunnel to node B")
		}
		return err
	})
	var up, ready, ratios []float64
	for b.Loop() {
		b.StopTimer()
		s.leave(ctx, b, peer)
		b.StartTimer()
		tunnelUp, agentReady := s.join(ctx, b, peer)
		up, ready = append(up, ms(tunnelUp)), append(ready, ms(agentReady))
		ratios = append(ratios, float64(tunnelUp)/float64(agentReady))
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(up), "peer-in-vpp-ms")
	b.ReportMetric(median(ready), "agent-ready-ms")
	b.ReportMetric(median(ratios), "peer/ready")
}

// peerNode is node B as node A's VPP holds it.
type peerNode struct {
	name, underlay string
	// route matches the FIB entry of B's share of red.
	route *regexp.Regexp
	// tunnels is how many VXLAN tunnels to B node A's VPP holds with B
	// in: one per network.
	tunnels int
	vpp     *memifnode.NodeVPP
}

// peerOf returns node B as node A's VPP holds it, its share of red read
// from its Lease.
func peerOf(ctx context.Context, b *testing.B, s *spanningNodes) *peerNode {
	b.Helper()
	leases, err := s.agents.Client().CoordinationV1().Leases(memifnode.Namespace).List(ctx, metav1.ListOptions{LabelSelector: shares.LabelNetwork + "=red"})
	if err != nil {
		b.Fatal(err)
	}
	p := &peerNode{name: s.names[1], underlay: netip.MustParsePrefix(memifnode.UnderlayAddress(1)).Addr().String(), vpp: s.vpps[0]}
	for _, lease := range leases.Items {
		if holder := lease.Spec.HolderIdentity; holder != nil && *holder == p.name {
			p.route = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(lease.Annotations[shares.AnnotationShare]) + `\s`)
		}
	}
	if p.route == nil {
		b.Fatalf("node %s holds no Lease of a share of red among %d", p.name, len(leases.Items))
	}
	return p
}

// inVPP returns how many VXLAN tunnels to the peer node A's VPP holds,
// and an error when it holds them without the route to the peer's share
// or the route without them.
func (p *peerNode) inVPP(ctx context.Context) (int, error) {
	tunnels, err := p.vpp.State.CLI(ctx, "show vxlan tunnel")
	if err != nil {
		return 0, err
	}
	fib, err := p.vpp.State.CLI(ctx, "show ip fib")
	if err != nil {
		return 0, err
	}
	n := strings.Count(tunnels, " dst "+p.underlay+" ")
	if routed := p.route.MatchString(fib); routed != (n > 0) {
		return n, fmt.Errorf("node A's VPP holds %d tunnels to node %s and the route to its share: %t", n, p.name, routed)
	}
	return n, nil
}

// leave opts node B out, and removes its underlay address annotation
// once its agent is gone, then waits until node A's VPP holds none of its
// tunnels and routes.
func (s *spanningNodes) leave(ctx context.Context, b *testing.B, p *peerNode) {
	b.Helper()
	if _, err := s.c.Kubectl(ctx, "label", "node", p.name, memifnode.NodeOptInLabel+"-"); err != nil {
		b.Fatalf("opt node %s out: %v", p.name, err)
	}
	poll.Until(b, waitLimit, "node "+p.name+"'s agent gone", func() error {
		pods, err := s.agentPods(ctx, p.name)
		if err == nil && len(pods) > 0 {
			err = fmt.Errorf("%d agent pods on node %s", len(pods), p.name)
		}
		return err
	})
	if _, err := s.c.Kubectl(ctx, "annotate", "node", p.name, underlay.Annotation+"-"); err != nil {
		b.Fatalf("remove node %s's underlay address: %v", p.name, err)
	}
	poll.Until(b, waitLimit, "node A's VPP without node "+p.name, func() error {
		n, err := p.inVPP(ctx)
		if err == nil && n > 0 {
			err = fmt.Errorf("%d tunnels to node %s", n, p.name)
		}
		return err
	})
}

// join opts node B in and returns how long node A's VPP took to hold its
// tunnels and route, and its agent to be Ready.
func (s *spanningNodes) join(ctx context.Context, b *testing.B, p *peerNode) (tunnelUp, agentReady time.Duration) {
	b.Helper()
	start := time.Now()
	if _, err := s.c.Kubectl(ctx, "label", "node", p.name, memifnode.NodeOptInLabel+"=true"); err != nil {
		b.Fatalf("opt node %s in: %v", p.name, err)
	}
	poll.Every(b, waitLimit, spanPause, "node "+p.name+" in node A's VPP and its agent Ready", func() error {
		if tunnelUp == 0 {
			n, err := p.inVPP(ctx)
			if err != nil {
				return err
			}
			if n == p.tunnels {
				tunnelUp = time.Since(start)
			}
		}
		if agentReady == 0 {
			ok, err := s.agentReady(ctx, p.name)
			if err != nil {
				return err
			}
			if ok {
				agentReady = time.Since(start)
			}
		}
		if tunnelUp == 0 || agentReady == 0 {
			return fmt.Errorf("after %v: in node A's VPP %t, agent Ready %t", time.Since(start), tunnelUp > 0, agentReady > 0)
		}
		return nil
	})
	return tunnelUp, agentReady
}

// agentPods are the agent's pods on node.
func (s *spanningNodes) agentPods(ctx context.Context, node string) ([]v1.Pod, error) {
	pods, err := s.agents.Client().CoreV1().Pods(memifnode.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=memif-agent",
		FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// agentReady says whether an agent pod on node is Ready.
func (s *spanningNodes) agentReady(ctx context.Context, node string) (bool, error) {
	pods, err := s.agentPods(ctx, node)
	if err != nil {
		return false, err
	}
	for _, pod := range pods {
		for _, condition := range pod.Status.Conditions {
			if pod.DeletionTimestamp == nil && condition.Type == v1.PodReady && condition.Status == v1.ConditionTrue {
				return true, nil
			}
		}
	}
	return false, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(values []float64) float64 {
	sorted := slices.Sorted(slices.Values(values))
	return sorted[len(sorted)/2]
}

// showRuntime is VPP 26.10's show runtime, cut, of a pod's VPP that
// received 7411 packets on its memif in the 4.0 s since clear runtime.
const showRuntime = `Time 4.0, 10.000000 sec internal node vector rate 42.17 loops/sec 36103.52
  vector rates in 1.8527e3, out 0.0000e0, drop 1.8527e3, punt 0.0000e0
             Name                 State         Calls          Vectors        Suspends      Packet-Clocks   Vectors/Call  
drop                             active                176            7411               0          1.03e2           42.11
ip4-input-no-checksum            active                176            7411               0          9.82e1           42.11
memif-input                      polling            144412            7411               0          2.41e3            0.05
unix-epoll-input                 polling            144412               0               0          1.19e3            0.00
`

func TestMemifInput(t *testing.T) {
	tests := []struct {
		name             string
		runtime          string
		packets, seconds float64
		wantErr          string
	}{
		{name: "polling", runtime: showRuntime, packets: 7411, seconds: 4},
		{name: "interrupt wait", runtime: "Time 2.5, 10.000000 sec internal node vector rate 0.00\n" +
			"memif-input                  interrupt wait          3              12               0          1.00e3            4.00\n", packets: 12, seconds: 2.5},
		{name: "no memif", runtime: "Time 4.0, 10.000000 sec\ndrop  active  1  1  0  1.0e2  1.00\n", wantErr: "no memif-input"},
		{name: "no time", runtime: "memif-input  polling  1  1  0  1.0e2  1.00\n", wantErr: "no time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			packets, seconds, err := memifInput(tt.runtime)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if packets != tt.packets || seconds != tt.seconds {
				t.Errorf("%v packets in %v s, want %v in %v", packets, seconds, tt.packets, tt.seconds)
			}
		})
	}
}
