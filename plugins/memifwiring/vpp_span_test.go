// Two agents in one process, each with its KV scheduler: vpp-agent's
// kvscheduler reads its package-level transaction statistics outside their
// lock (stats.go, trackTransactionMethod), which the race detector reports
// when both schedulers run transactions at once. The agent runs one
// scheduler per process; make test-unit runs this file without -race.

//go:build !race

package memifwiring_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// spanSource is a span the test changes, as the crossnode plugin's.
type spanSource struct {
	mu   sync.Mutex
	span crossnodeapi.Span
}

func (s *spanSource) Span() crossnodeapi.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.span
}

func (s *spanSource) set(span crossnodeapi.Span) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.span = span
}

// underlayVeth creates a veth pair for t, both ends up, and returns the
// ends' names; it is deleted when t ends.
func underlayVeth(t *testing.T) (string, string) {
	t.Helper()
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	a, b := "mw"+hex.EncodeToString(id[:])+"a", "mw"+hex.EncodeToString(id[:])+"b"
	for _, args := range [][]string{{"link", "add", a, "type", "veth", "peer", "name", b}, {"link", "set", a, "up"}, {"link", "set", b, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", a).Run() })
	return a, b
}

// startSpanningAgent starts an agent on its own VPP (with af_packet and
// vxlan) whose networks span nodes as span says.
func startSpanningAgent(t *testing.T, span *spanSource) *vppAgent {
	t.Helper()
	v := vpp.Start(t, vpp.Plugins("af_packet", "vxlan", "ping"))
	return startOnVPP(t, v, "link-check-period: 50ms\n", agentSetup{networksConf: redNetworks, span: span})
}

// vxlanTunnels counts VPP's VXLAN tunnels.
func vxlanTunnels(t *testing.T, v *vpp.VPP) int {
	t.Helper()
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "memifwiring-test-vxlan", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tunnels, err := vppapi.Dump[vppmsg.VxlanTunnelV2Details](t.Context(), conn, &vppmsg.VxlanTunnelV2Dump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if err != nil {
		t.Fatal(err)
	}
	return len(tunnels)
}

// TestL3NetworkAcrossTwoVPPs: two nodes' agents, each with its own VPP
// on one end of a veth (the underlay) and a pod in l3 network red, wire
// red across the nodes as their spans say: each pod gets an address of
// its node's share, and each VPP reaches the other's gateway in red's
// VRF through the VXLAN tunnel. A peer gone takes its tunnel and route.
func TestL3NetworkAcrossTwoVPPs(t *testing.T) {
	ends := [2]string{}
	ends[0], ends[1] = underlayVeth(t)
	underlay := [2]netip.Prefix{netip.MustParsePrefix("192.168.232.1/24"), netip.MustParsePrefix("192.168.232.2/24")}
	shares := [2]netip.Prefix{netip.MustParsePrefix("10.70.0.0/26"), netip.MustParsePrefix("10.70.0.64/26")}
	gateways := [2]string{"10.70.0.1", "10.70.0.64"}
	spans := [2]*spanSource{{}, {}}
	for i := range spans {
		spans[i].set(crossnodeapi.Span{Interface: ends[i], Address: underlay[i], Shares: map[string]netip.Prefix{"red": shares[i]},
			Peers: map[string]crossnodeapi.Peer{fmt.Sprint("node-", 1-i): {Address: underlay[1-i].Addr(), Shares: map[string]netip.Prefix{"red": shares[1-i]}}}})
	}
	var agents [2]*vppAgent
	for i := range agents {
		agents[i] = startSpanningAgent(t, spans[i])
		allocation, _ := agents[i].addAnnotatedPod(t, "r1", "memif-000", `[{"network": "red"}]`)
		wantInterface(t, readMemifJSON(t, allocation), "red", netip.PrefixFrom(netip.MustParseAddr(gateways[i]).Next(), 24).String(), gateways[i], 1)
		// The KV scheduler keeps its statistics in globals: two
		// schedulers of one process may not process at once.
		agents[i].KVScheduler.TransactionBarrier()
	}
	red := netconf.DeriveID("red")
	for i, agent := range agents {
		poll.Until(t, waitLimit, fmt.Sprintf("node %d pinging node %d's gateway in red", i, 1-i), func() error {
			out := agent.vpp.CLI(t, "ping", gateways[1-i], "table-id", fmt.Sprint(red), "repeat", "3", "interval", "0.1")
			if !strings.Contains(out, "3 sent, 3 received") {
				return fmt.Errorf("ping says: %s", out)
			}
			return nil
		})
	}
	if n := vxlanTunnels(t, agents[0].vpp); n != 1 {
		t.Fatalf("node 0's VPP holds %d VXLAN tunnels, want 1", n)
	}

	alone := spans[0].Span()
	alone.Peers = nil
	spans[0].set(alone)
	agents[0].Push(t, &crossnodeapi.SpanChanged{Span: alone})
	agents[0].Barrier(t)
	if n := vxlanTunnels(t, agents[0].vpp); n != 0 {
		t.Errorf("node 0's VPP holds %d VXLAN tunnels once its peer left, want none", n)
	}
	if out := agents[0].vpp.CLI(t, "show", "ip", "fib", "table", fmt.Sprint(red), shares[1].String()); strings.Contains(out, gateways[1]) {
		t.Errorf("node 0 still routes node 1's share: %s", out)
	}
}
