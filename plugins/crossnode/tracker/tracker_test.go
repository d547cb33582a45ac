package tracker_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"

	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	"github.com/contivpp/memif-agent/plugins/crossnode/tracker"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/networks/underlay"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// waitLimit bounds the waits for what the fake API server's watches
// tell, which takes milliseconds.
const waitLimit = 30 * time.Second

var networks = netconf.Config{Networks: []netconf.Network{
	{Name: "red", Type: netconf.L3, Subnet: "10.70.0.0/24"},
	{Name: "lab", Type: netconf.L2},
}}

// spans keeps the spans a tracker handed out.
type spans struct {
	mu   sync.Mutex
	last crossnodeapi.Span
}

func (s *spans) changed(span crossnodeapi.Span) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = span
	return nil
}

func (s *spans) get() crossnodeapi.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// TestTwoNodesLearnEachOther: two nodes' trackers on one API server each
// publish their address, claim a share of red of their own, and hand out
// a span with the other node as a peer holding its share.
func TestTwoNodesLearnEachOther(t *testing.T) {
	client := fakeapiserver.NewClientset()
	nodes := []string{"node-a", "node-b"}
	addresses := []string{"192.168.230.1/24", "192.168.230.2/24"}
	got := make([]*spans, len(nodes))
	trackers := make([]*tracker.Tracker, len(nodes))
	ctx, cancel := context.WithCancel(t.Context())
	var running sync.WaitGroup
	t.Cleanup(func() { cancel(); running.Wait() })
	for i, node := range nodes {
		if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: types.UID("uid-" + node)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got[i] = &spans{}
		trackers[i] = tracker.New(tracker.Options{Client: client, Node: node, Namespace: "memif", Interface: "vpp-ul",
			Address: netip.MustParsePrefix(addresses[i]), Networks: func() netconf.Config { return networks },
			Changed: got[i].changed, Period: time.Second})
		if span := trackers[i].Span(); !span.Enabled() || len(span.Peers) != 0 || len(span.Shares) != 0 {
			t.Fatalf("span before Run: %s, want the underlay alone", span)
		}
		running.Go(func() { trackers[i].Run(ctx) })
	}
	for i := range nodes {
		other := 1 - i
		poll.Until(t, waitLimit, fmt.Sprintf("%s's span with %s", nodes[i], nodes[other]), func() error {
			span := got[i].get()
			peer, ok := span.Peers[nodes[other]]
			switch {
			case !ok || peer.Address != netip.MustParsePrefix(addresses[other]).Addr():
				return fmt.Errorf("span %s: no peer %s at %s", span, nodes[other], addresses[other])
			case !span.Shares["red"].IsValid() || peer.Shares["red"] != got[other].get().Shares["red"]:
				return fmt.Errorf("span %s: want its share of red and %s's", span, nodes[other])
			case span.Shares["red"].Overlaps(peer.Shares["red"]):
				return fmt.Errorf("span %s: both nodes hold %s", span, span.Shares["red"])
			case !span.Equal(trackers[i].Span()):
				return fmt.Errorf("handed out %s, Span says %s", span, trackers[i].Span())
			}
			return nil
		})
		node, err := client.CoreV1().Nodes().Get(ctx, nodes[i], metav1.GetOptions{})
		if err != nil || node.Annotations[underlay.Annotation] != netip.MustParsePrefix(addresses[i]).Addr().String() {
			t.Errorf("Node %s: %v, annotations %v", nodes[i], err, node.GetAnnotations())
		}
	}
}
