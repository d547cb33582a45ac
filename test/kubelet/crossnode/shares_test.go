package crossnode

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// gcLimit bounds the wait for the garbage collector, which sees a Node
// deleted within seconds on a quiet machine.
const gcLimit = 2 * time.Minute

// TestSharesClaimedAtOnce: as many nodes as shares claim at once and get
// one share each; one more node finds the subnet exhausted.
func TestSharesClaimedAtOnce(t *testing.T) {
	client := apiServer(t)
	for _, tc := range []struct {
		name    string
		network shares.Network
	}{
		{"ipv4 eight shares", shares.Network{Name: "red", Subnet: netip.MustParsePrefix("10.70.0.0/24"), NodePrefixLength: 27}},
		{"ipv6 four shares", shares.Network{Name: "v6", Subnet: netip.MustParsePrefix("fd00:70::/120"), NodePrefixLength: 122}},
		{"one share", shares.Network{Name: "one", Subnet: netip.MustParsePrefix("10.71.0.0/26"), NodePrefixLength: 26}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			namespace := testNamespace(t, client)
			count := int(shares.Count(tc.network.Subnet, tc.network.NodePrefixLength))
			nodes := createNodes(t, client, count+1)
			got := make([]shares.Share, count)
			errs := make([]error, count)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range count {
				wg.Go(func() {
					<-start
					claimer := shares.Claimer{Client: client, Namespace: namespace, Node: nodes[i]}
					got[i], errs[i] = claimer.Claim(ctx, tc.network)
				})
			}
			close(start)
			wg.Wait()
			byPrefix := map[netip.Prefix]string{}
			for i, share := range got {
				if errs[i] != nil {
					t.Fatalf("node %s: %v", nodes[i], errs[i])
				}
				if other, dup := byPrefix[share.Prefix]; dup {
					t.Fatalf("nodes %s and %s both got share %s", other, nodes[i], share.Prefix)
				}
				byPrefix[share.Prefix] = nodes[i]
				assertLeaseHeld(t, namespace, share, nodes[i])
			}
			late := shares.Claimer{Client: client, Namespace: namespace, Node: nodes[count]}
			if share, err := late.Claim(ctx, tc.network); !errors.Is(err, shares.ErrExhausted) {
				t.Fatalf("a claim past the %d shares = %+v, %v; want ErrExhausted", count, share, err)
			}
		})
	}
}

// TestShareKeptAcrossRestarts: a claimer started again for the node (an
// agent or node restart) gets the node's share back, whatever other nodes
// claimed meanwhile; a new share length replaces the node's Lease.
func TestShareKeptAcrossRestarts(t *testing.T) {
	client := apiServer(t)
	red := shares.Network{Name: "red", Subnet: netip.MustParsePrefix("10.70.0.0/24"), NodePrefixLength: 26}
	redLonger := red
	redLonger.NodePrefixLength = 28
	for _, tc := range []struct {
		name      string
		restarted shares.Network
		// want is the restarted claim's share, the node's one Lease.
		want string
	}{
		{"same config", red, "10.70.0.64/26"},
		{"longer share", redLonger, "10.70.0.16/28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			namespace := testNamespace(t, client)
			nodes := createNodes(t, client, 2)
			first := shares.Claimer{Client: client, Namespace: namespace, Node: nodes[0]}
			second := shares.Claimer{Client: client, Namespace: namespace, Node: nodes[1]}
			if _, err := first.Claim(ctx, red); err != nil {
				t.Fatal(err)
			}
			before, err := second.Claim(ctx, red)
			if err != nil {
				t.Fatal(err)
			}
			restarted := shares.Claimer{Client: client, Namespace: namespace, Node: nodes[1]}
			after, err := restarted.Claim(ctx, tc.restarted)
			if err != nil {
				t.Fatal(err)
			}
			if after.Prefix != netip.MustParsePrefix(tc.want) {
				t.Fatalf("after the restart the node has share %s (before: %s), want %s", after.Prefix, before.Prefix, tc.want)
			}
			leases, err := client.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var held []string
			for _, lease := range leases.Items {
				if *lease.Spec.HolderIdentity == nodes[1] {
					held = append(held, lease.Annotations[shares.AnnotationShare])
				}
			}
			if len(held) != 1 || held[0] != tc.want {
				t.Fatalf("the node's Leases name shares %v, want %s alone", held, tc.want)
			}
		})
	}
}

// TestShareFreedWithItsNode: the garbage collector deletes the Lease of a
// deleted Node, and the next node claims its share.
func TestShareFreedWithItsNode(t *testing.T) {
	client := apiServer(t)
	ctx := context.Background()
	namespace := testNamespace(t, client)
	nodes := createNodes(t, client, 3)
	red := shares.Network{Name: "red", Subnet: netip.MustParsePrefix("10.70.0.0/24"), NodePrefixLength: 26}
	claimed := make([]shares.Share, 2)
	for i := range claimed {
		var err error
		if claimed[i], err = (shares.Claimer{Client: client, Namespace: namespace, Node: nodes[i]}).Claim(ctx, red); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.CoreV1().Nodes().Delete(ctx, nodes[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, gcLimit, "the deleted Node's Lease gone", func() error {
		_, err := client.CoordinationV1().Leases(namespace).Get(ctx, claimed[0].Lease, metav1.GetOptions{})
		if err == nil {
			return errors.New("it is still there")
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	assertLeaseHeld(t, namespace, claimed[1], nodes[1])
	next, err := (shares.Claimer{Client: client, Namespace: namespace, Node: nodes[2]}).Claim(ctx, red)
	if err != nil {
		t.Fatal(err)
	}
	if next.Prefix != claimed[0].Prefix {
		t.Fatalf("the next node got share %s, want the freed %s", next.Prefix, claimed[0].Prefix)
	}
}

// TestReleaseFreesTheShare: Release deletes the node's Lease and leaves
// the other node's.
func TestReleaseFreesTheShare(t *testing.T) {
	client := apiServer(t)
	ctx := context.Background()
	namespace := testNamespace(t, client)
	nodes := createNodes(t, client, 2)
	red := shares.Network{Name: "red", Subnet: netip.MustParsePrefix("10.70.0.0/24"), NodePrefixLength: 25}
	claimers := []shares.Claimer{{Client: client, Namespace: namespace, Node: nodes[0]}, {Client: client, Namespace: namespace, Node: nodes[1]}}
	claimed := make([]shares.Share, len(claimers))
	for i, claimer := range claimers {
		var err error
		if claimed[i], err = claimer.Claim(ctx, red); err != nil {
			t.Fatal(err)
		}
	}
	if err := claimers[0].Release(ctx, red.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(namespace).Get(ctx, claimed[0].Lease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the released Lease: get = %v, want NotFound", err)
	}
	assertLeaseHeld(t, namespace, claimed[1], nodes[1])
}

// assertLeaseHeld checks that share's Lease is held by node and owned by
// its Node object.
func assertLeaseHeld(t *testing.T, namespace string, share shares.Share, node string) {
	t.Helper()
	client := controlPlane.client
	ctx := context.Background()
	lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, share.Lease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("share %s: %v", share.Prefix, err)
	}
	nodeObject, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != node:
		t.Fatalf("Lease %s is held by %v, want %s", lease.Name, lease.Spec.HolderIdentity, node)
	case len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != nodeObject.UID:
		t.Fatalf("Lease %s is owned by %+v, want Node %s (%s)", lease.Name, lease.OwnerReferences, node, nodeObject.UID)
	case lease.Annotations[shares.AnnotationShare] != share.Prefix.String():
		t.Fatalf("Lease %s names share %q, want %s", lease.Name, lease.Annotations[shares.AnnotationShare], share.Prefix)
	}
}

// TestSharesWatched: a watcher of the namespace's Leases sees every
// node's share of every network, a share released, and the shares of a
// deleted Node freed.
func TestSharesWatched(t *testing.T) {
	client := apiServer(t)
	ctx := context.Background()
	namespace := testNamespace(t, client)
	nodes := createNodes(t, client, 2)
	networks := []shares.Network{
		{Name: "red", Subnet: netip.MustParsePrefix("10.70.0.0/24"), NodePrefixLength: 26},
		{Name: "v6", Subnet: netip.MustParsePrefix("fd00:70::/64"), NodePrefixLength: 122},
	}
	held := &heldWatcher{}
	watchCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- shares.Watch(watchCtx, client, namespace, func(h shares.Held) {
			held.mu.Lock()
			defer held.mu.Unlock()
			held.last = h
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	want := shares.Held{}
	for _, network := range networks {
		want[network.Name] = map[string]netip.Prefix{}
		for _, node := range nodes {
			share, err := (shares.Claimer{Client: client, Namespace: namespace, Node: node}).Claim(ctx, network)
			if err != nil {
				t.Fatal(err)
			}
			want[network.Name][node] = share.Prefix
		}
	}
	held.waitFor(t, want)

	if err := (shares.Claimer{Client: client, Namespace: namespace, Node: nodes[0]}).Release(ctx, "v6"); err != nil {
		t.Fatal(err)
	}
	delete(want["v6"], nodes[0])
	held.waitFor(t, want)

	if err := client.CoreV1().Nodes().Delete(ctx, nodes[1], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = shares.Held{"red": {nodes[0]: want["red"][nodes[0]]}}
	held.waitFor(t, want)
}

// heldWatcher keeps the last shares Watch reported.
type heldWatcher struct {
	mu   sync.Mutex
	last shares.Held
}

func (w *heldWatcher) waitFor(t *testing.T, want shares.Held) {
	t.Helper()
	poll.Until(t, gcLimit, fmt.Sprintf("shares %v", want), func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.last.Equal(want) {
			return fmt.Errorf("the last report: %v", w.last)
		}
		return nil
	})
}

// TestShareOfANodeRegisteredAgain: a node deleted and registered again
// under its name (a new Node object) before the garbage collector freed
// its share claims a share, owned by the new Node, that the collector
// leaves: it either kept the old one (handed to the new Node) or, freed
// meanwhile, claimed one anew.
func TestShareOfANodeRegisteredAgain(t *testing.T) {
	client := apiServer(t)
	ctx := context.Background()
	namespace := testNamespace(t, client)
	node := createNodes(t, client, 1)[0]
	red := shares.Network{Name: "red", Subnet: netip.MustParsePrefix("10.70.0.0/24"), NodePrefixLength: 26}
	claimer := shares.Claimer{Client: client, Namespace: namespace, Node: node}
	if _, err := claimer.Claim(ctx, red); err != nil {
		t.Fatal(err)
	}
	old, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// sentinel is owned by the old Node alone: once the collector deleted
	// it, it has dealt with the old Node's dependents.
	sentinel := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "sentinel", Namespace: namespace,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: old.UID}}}}
	if _, err := client.CoordinationV1().Leases(namespace).Create(ctx, sentinel, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	share, err := claimer.Claim(ctx, red)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, gcLimit, "the old Node's sentinel Lease gone", func() error {
		_, err := client.CoordinationV1().Leases(namespace).Get(ctx, sentinel.Name, metav1.GetOptions{})
		if err == nil {
			return errors.New("it is still there")
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, share.Lease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the share claimed after the Node came back: %v", err)
	}
	if len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != again.UID {
		t.Fatalf("Lease %s is owned by %+v, want the new Node (%s)", lease.Name, lease.OwnerReferences, again.UID)
	}
}
