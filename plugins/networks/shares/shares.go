package shares

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The labels and annotation of a share's Lease.
const (
	// LabelNetwork is the network's name.
	LabelNetwork = "memif.contivpp.io/network"
	// LabelIndex is the share's index in the subnet.
	LabelIndex = "memif.contivpp.io/share-index"
	// AnnotationShare is the share's prefix, as networks.conf made it.
	AnnotationShare = "memif.contivpp.io/share"
)

// ErrExhausted is returned when every share of a subnet is held.
var ErrExhausted = errors.New("every share of the subnet is held by another node")

// Network is what a claim needs of an l3 network.
type Network struct {
	Name   string
	Subnet netip.Prefix
	// NodePrefixLength is the length of each node's share.
	NodePrefixLength int
}

// Share is a node's share of a network's subnet.
type Share struct {
	Index  uint64
	Prefix netip.Prefix
	// Lease is the name of the Lease that holds it.
	Lease string
}

// Claimer claims the shares of one node. Its methods may be called from
// several goroutines.
type Claimer struct {
	// Client reaches the API server; it needs get on nodes and get, list,
	// create, update and delete on leases in Namespace.
	Client kubernetes.Interface
	// Namespace holds the Leases.
	Namespace string
	// Node is the node's name, which its Node object has.
	Node string
}

// LeaseName is the name of the Lease of share index of network.
func LeaseName(network string, index uint64) string {
	return "memif-share-" + network + "-" + strconv.FormatUint(index, 10)
}

// Claim returns the node's share of n: the one it holds, else the first
// free one, claimed. It fails with ErrExhausted when other nodes hold
// every share.
func (c Claimer) Claim(ctx context.Context, n Network) (Share, error) {
	if err := checkSplit(n.Subnet, n.NodePrefixLength); err != nil {
		return Share{}, fmt.Errorf("network %s: %w", n.Name, err)
	}
	node, err := c.Client.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
	if err != nil {
		return Share{}, fmt.Errorf("network %s: get Node %s, the owner of its share: %w", n.Name, c.Node, err)
	}
	leases, err := c.leases(ctx, n.Name)
	if err != nil {
		return Share{}, err
	}
	share, held, err := c.held(ctx, n, node.UID, leases)
	if err != nil || held {
		return share, err
	}
	return c.claimFree(ctx, n, node.UID, leases)
}

// Release deletes the node's Leases of network, freeing its shares.
func (c Claimer) Release(ctx context.Context, network string) error {
	leases, err := c.leases(ctx, network)
	if err != nil {
		return err
	}
	for _, lease := range leases {
		if holder(lease) == c.Node {
			if err := c.delete(ctx, lease); err != nil {
				return err
			}
		}
	}
	return nil
}

// leases lists the Leases of network's shares.
func (c Claimer) leases(ctx context.Context, network string) ([]coordinationv1.Lease, error) {
	selector := labels.SelectorFromSet(labels.Set{LabelNetwork: network}).String()
	list, err := c.Client.CoordinationV1().Leases(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("network %s: list the Leases of its shares in namespace %s: %w", network, c.Namespace, err)
	}
	return list.Items, nil
}

// held returns the share the node holds among leases, if it holds one
// that matches n: the one of the lowest index. The node's Leases that do
// not match n (networks.conf changed the subnet or the share length) are
// deleted. A held Lease owned by an earlier Node of the same name (the
// node was deleted and registered again, and the garbage collector has not
// deleted it yet) is handed to this Node; if that fails, the share is
// claimed anew.
func (c Claimer) held(ctx context.Context, n Network, nodeUID types.UID, leases []coordinationv1.Lease) (Share, bool, error) {
	var found *coordinationv1.Lease
	var share Share
	for i := range leases {
		lease := &leases[i]
		if holder(*lease) != c.Node {
			continue
		}
		s, ok := matching(*lease, n)
		if !ok {
			if err := c.delete(ctx, *lease); err != nil {
				return Share{}, false, err
			}
			continue
		}
		if found == nil || s.Index < share.Index {
			found, share = lease, s
		}
	}
	if found == nil {
		return Share{}, false, nil
	}
	if ownedBy(*found, nodeUID) {
		return share, true, nil
	}
	lease := found.DeepCopy()
	lease.OwnerReferences = []metav1.OwnerReference{c.owner(nodeUID)}
	_, err := c.Client.CoordinationV1().Leases(c.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	switch {
	case err == nil:
		return share, true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return Share{}, false, nil
	}
	return Share{}, false, fmt.Errorf("network %s: hand Lease %s to Node %s: %w", n.Name, lease.Name, c.Node, err)
}

// claimFree creates the Lease of the first share no other node's Lease
// names, and of the next when another node created that one first. The
// node's own Leases in leases were stale and held deleted them.
func (c Claimer) claimFree(ctx context.Context, n Network, nodeUID types.UID, leases []coordinationv1.Lease) (Share, error) {
	taken := make(map[string]bool, len(leases))
	for _, lease := range leases {
		taken[lease.Name] = holder(lease) != c.Node
	}
	count := Count(n.Subnet, n.NodePrefixLength)
	for index := uint64(0); index < count; index++ {
		name := LeaseName(n.Name, index)
		if taken[name] {
			continue
		}
		prefix, err := ShareAt(n.Subnet, n.NodePrefixLength, index)
		if err != nil {
			return Share{}, err
		}
		_, err = c.Client.CoordinationV1().Leases(c.Namespace).Create(ctx, c.lease(n, name, index, prefix, nodeUID), metav1.CreateOptions{})
		switch {
		case err == nil:
			return Share{Index: index, Prefix: prefix, Lease: name}, nil
		case apierrors.IsAlreadyExists(err):
			continue
		}
		return Share{}, fmt.Errorf("network %s: create Lease %s for share %s: %w", n.Name, name, prefix, err)
	}
	return Share{}, fmt.Errorf("%w: network %s has %d shares of /%d in %s; lengthen its node-prefix-length or widen its subnet", ErrExhausted, n.Name, count, n.NodePrefixLength, n.Subnet)
}

// lease is the Lease of one share, held by the node.
func (c Claimer) lease(n Network, name string, index uint64, prefix netip.Prefix, nodeUID types.UID) *coordinationv1.Lease {
	now := metav1.NowMicro()
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       c.Namespace,
			Labels:          map[string]string{LabelNetwork: n.Name, LabelIndex: strconv.FormatUint(index, 10)},
			Annotations:     map[string]string{AnnotationShare: prefix.String()},
			OwnerReferences: []metav1.OwnerReference{c.owner(nodeUID)},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(c.Node), AcquireTime: &now},
	}
}

// owner is the ownerReference to the node's Node object.
func (c Claimer) owner(nodeUID types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: c.Node, UID: nodeUID}
}

// delete deletes lease unless it changed since it was read.
func (c Claimer) delete(ctx context.Context, lease coordinationv1.Lease) error {
	err := c.Client.CoordinationV1().Leases(c.Namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete Lease %s of share %s: %w", lease.Name, lease.Annotations[AnnotationShare], err)
	}
	return nil
}

// matching returns the share lease holds if it is a share of n as n cuts
// its subnet now.
func matching(lease coordinationv1.Lease, n Network) (Share, bool) {
	index, err := strconv.ParseUint(lease.Labels[LabelIndex], 10, 64)
	if err != nil || lease.Name != LeaseName(n.Name, index) {
		return Share{}, false
	}
	prefix, err := ShareAt(n.Subnet, n.NodePrefixLength, index)
	if err != nil || lease.Annotations[AnnotationShare] != prefix.String() {
		return Share{}, false
	}
	return Share{Index: index, Prefix: prefix, Lease: lease.Name}, true
}

func holder(lease coordinationv1.Lease) string {
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

func ownedBy(lease coordinationv1.Lease, nodeUID types.UID) bool {
	for _, ref := range lease.OwnerReferences {
		if ref.Kind == "Node" && ref.UID == nodeUID {
			return true
		}
	}
	return false
}
