package tracker_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/contivpp/memif-agent/plugins/crossnode/tracker"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/networks/underlay"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// running is a tracker run until stop.
type running struct {
	tracker *tracker.Tracker
	spans   *spans
	stop    func()
}

// startTracker creates node (once) and runs a tracker for it.
func startTracker(t *testing.T, client *fakeapiserver.Clientset, node, address string) running {
	t.Helper()
	_, err := client.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: types.UID("uid-" + node)}}, metav1.CreateOptions{})
	if err != nil && !isAlreadyExists(err) {
		t.Fatal(err)
	}
	got := &spans{}
	tr := tracker.New(tracker.Options{Client: client, Node: node, Namespace: "memif", Interface: "vpp-ul",
		Address: netip.MustParsePrefix(address), Networks: func() netconf.Config { return networks },
		Changed: got.changed, Period: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	var done sync.WaitGroup
	done.Go(func() { tr.Run(ctx) })
	r := running{tracker: tr, spans: got, stop: func() { cancel(); done.Wait() }}
	t.Cleanup(r.stop)
	return r
}

func isAlreadyExists(err error) bool {
	var status interface{ Status() metav1.Status }
	return errors.As(err, &status) && status.Status().Reason == metav1.StatusReasonAlreadyExists
}

// waitListed waits for r's first listing.
func waitListed(t *testing.T, r running) {
	t.Helper()
	select {
	case <-r.tracker.Listed():
	case <-time.After(waitLimit):
		t.Fatalf("no first listing in %s; span %s", waitLimit, r.tracker.Span())
	}
}

// TestRestartedTrackerListsTheLastSpan: node-b's tracker, stopped and
// started again as an agent restart does, holds once Listed the span
// the one before handed out last (its own share of red, node-a with
// node-a's), not the underlay alone, which the memif wiring's first
// resync would render by removing the tunnels and routes.
func TestRestartedTrackerListsTheLastSpan(t *testing.T) {
	client := fakeapiserver.NewClientset()
	a := startTracker(t, client, "node-a", "192.168.230.1/24")
	b := startTracker(t, client, "node-b", "192.168.230.2/24")
	for _, r := range []running{a, b} {
		poll.Until(t, waitLimit, "both shares and the other node in a span", func() error {
			span := r.spans.get()
			if len(span.Peers) != 1 || !span.Shares["red"].IsValid() {
				return fmt.Errorf("span %s", span)
			}
			for _, peer := range span.Peers {
				if !peer.Shares["red"].IsValid() {
					return fmt.Errorf("span %s: the peer's share of red missing", span)
				}
			}
			return nil
		})
	}
	b.stop()
	last := b.spans.get()

	restarted := startTracker(t, client, "node-b", "192.168.230.2/24")
	waitListed(t, restarted)
	if span := restarted.tracker.Span(); !span.Equal(last) {
		t.Errorf("span once listed after the restart: %s\nwant the last before it: %s", span, last)
	}
}

// TestListedWaitsForTheNodes: while the API server fails to list the
// Nodes, the node's share is claimed but Listed stays open; once it
// lists them, Listed closes with the peer in the span.
func TestListedWaitsForTheNodes(t *testing.T) {
	client := fakeapiserver.NewClientset()
	// A peer without a tracker: the reactor is set before any request.
	peer := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{underlay.Annotation: "192.168.230.1"}}}
	if _, err := client.CoreV1().Nodes().Create(t.Context(), peer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var failing atomic.Bool
	failing.Store(true)
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, errors.New("the API server is unavailable")
		}
		return false, nil, nil
	})
	b := startTracker(t, client, "node-b", "192.168.230.2/24")
	poll.Until(t, waitLimit, "node-b's share of red claimed", func() error {
		if span := b.spans.get(); !span.Shares["red"].IsValid() {
			return fmt.Errorf("span %s", span)
		}
		return nil
	})
	select {
	case <-b.tracker.Listed():
		t.Fatalf("listed while the Nodes cannot be listed; span %s", b.tracker.Span())
	default:
	}
	failing.Store(false)
	waitListed(t, b)
	if _, ok := b.tracker.Span().Peers["node-a"]; !ok {
		t.Errorf("span once listed: %s, want node-a as a peer", b.tracker.Span())
	}
}
