package crossnode

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/plugins/networks/underlay"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// watchLimit bounds the wait for a watcher to see a change, which takes a
// second or less on a quiet machine.
const watchLimit = 30 * time.Second

// TestUnderlayPeers: three nodes publish their addresses and each
// watcher sees the two others; then, step by step, every watcher sees an
// address change, a bad annotation, and a Node deleted.
func TestUnderlayPeers(t *testing.T) {
	client := apiServer(t)
	ctx := context.Background()
	nodes := createNodes(t, client, 3)
	addrs := []netip.Addr{netip.MustParseAddr("192.168.70.1"), netip.MustParseAddr("192.168.70.2"), netip.MustParseAddr("fd00:70::3")}
	watchers := make([]*watcher, len(nodes))
	for i, node := range nodes {
		if err := underlay.Publish(ctx, client, node, addrs[i]); err != nil {
			t.Fatal(err)
		}
		watchers[i] = startWatcher(t, client, node)
	}
	// want is what every node's watcher should see, by node; a deleted
	// node watches nothing.
	want := func(addresses map[string]netip.Addr, invalid map[string]string) {
		t.Helper()
		for i, w := range watchers {
			if w == nil {
				continue
			}
			expected := underlay.Peers{Addresses: map[string]netip.Addr{}, Invalid: map[string]string{}}
			for node, addr := range addresses {
				if node != nodes[i] {
					expected.Addresses[node] = addr
				}
			}
			for node, reason := range invalid {
				if node != nodes[i] {
					expected.Invalid[node] = reason
				}
			}
			w.waitFor(t, expected)
		}
	}
	want(map[string]netip.Addr{nodes[0]: addrs[0], nodes[1]: addrs[1], nodes[2]: addrs[2]}, nil)

	moved := netip.MustParseAddr("192.168.70.20")
	if err := underlay.Publish(ctx, client, nodes[1], moved); err != nil {
		t.Fatal(err)
	}
	want(map[string]netip.Addr{nodes[0]: addrs[0], nodes[1]: moved, nodes[2]: addrs[2]}, nil)

	annotate(t, client, nodes[2], "not-an-address")
	want(map[string]netip.Addr{nodes[0]: addrs[0], nodes[1]: moved},
		map[string]string{nodes[2]: `annotation memif.contivpp.io/underlay-address is "not-an-address", not an IP address`})

	if err := client.CoreV1().Nodes().Delete(ctx, nodes[1], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	watchers[1] = nil
	want(map[string]netip.Addr{nodes[0]: addrs[0]},
		map[string]string{nodes[2]: `annotation memif.contivpp.io/underlay-address is "not-an-address", not an IP address`})
}

// TestPublishRefusesABadAddress: Publish names what is wrong, and the Node
// keeps its annotations.
func TestPublishRefusesABadAddress(t *testing.T) {
	client := apiServer(t)
	nodes := createNodes(t, client, 1)
	for _, tc := range []struct {
		name string
		addr netip.Addr
	}{
		{"zero", netip.Addr{}},
		{"zone", netip.MustParseAddr("fe80::1%eth0")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := underlay.Publish(context.Background(), client, nodes[0], tc.addr); err == nil {
				t.Fatalf("Publish(%v) = nil, want an error", tc.addr)
			}
		})
	}
	if err := underlay.Publish(context.Background(), client, "no-such-node", netip.MustParseAddr("192.168.70.9")); err == nil {
		t.Fatal("Publish on a node that does not exist = nil, want an error")
	}
}

// watcher keeps the last peers one node's Watch reported.
type watcher struct {
	mu    sync.Mutex
	last  underlay.Peers
	calls int
}

// startWatcher runs Watch for node until t ends.
func startWatcher(t *testing.T, client kubernetes.Interface, node string) *watcher {
	t.Helper()
	w := &watcher{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- underlay.Watch(ctx, client, node, func(peers underlay.Peers) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.last, w.calls = peers, w.calls+1
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch of node %s: %v", node, err)
		}
	})
	return w
}

func (w *watcher) waitFor(t *testing.T, want underlay.Peers) {
	t.Helper()
	poll.Until(t, watchLimit, fmt.Sprintf("peers %v", want), func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.calls == 0 || !w.last.Equal(want) {
			return fmt.Errorf("the last of %d reports: %+v", w.calls, w.last)
		}
		return nil
	})
}

// annotate sets node's underlay annotation to value as is.
func annotate(t *testing.T, client kubernetes.Interface, node, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, underlay.Annotation, value)
	if _, err := client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
