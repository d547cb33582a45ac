package underlay

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/internal/kubeclient"
)

// Annotation is the Node annotation that holds the node's underlay
// address.
const Annotation = "memif.contivpp.io/underlay-address"

// Publish sets node's annotation to addr. The client needs patch on
// nodes.
func Publish(ctx context.Context, client kubernetes.Interface, node string, addr netip.Addr) error {
	if !addr.IsValid() || addr.Zone() != "" {
		return fmt.Errorf("publish the underlay address of node %s: %q is not an IP address without a zone", node, addr)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{Annotation: addr.Unmap().String()}}})
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("publish the underlay address %s as annotation %s of Node %s: %w", addr, Annotation, node, err)
	}
	return nil
}

// Peers are the other nodes' underlay addresses.
type Peers struct {
	// Addresses are the peers' addresses, by node name.
	Addresses map[string]netip.Addr
	// Invalid are the nodes whose annotation is left out, by node name,
	// with the reason.
	Invalid map[string]string
}

// Equal tells whether p and o hold the same peers and the same problems.
func (p Peers) Equal(o Peers) bool {
	return maps.Equal(p.Addresses, o.Addresses) && maps.Equal(p.Invalid, o.Invalid)
}

// Watch calls report with the peers of node self once the Nodes are
// listed, then each time they change, until ctx ends; it returns nil then.
// report runs on Watch's goroutine, one call at a time: while it runs,
// changes gather into the next call.
func Watch(ctx context.Context, client kubernetes.Interface, self string, report func(Peers)) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(keepAnnotation))
	nodes := factory.Core().V1().Nodes()
	err := kubeclient.Follow(ctx, factory, nodes.Informer(), func() (Peers, error) {
		listed, err := nodes.Lister().List(labels.Everything())
		return peersOf(listed, self), err
	}, Peers.Equal, report)
	if err != nil {
		return fmt.Errorf("watch the Nodes' underlay addresses: %w", err)
	}
	return nil
}

// peersOf reads the nodes' annotations, self's left out. Of peers that
// name one address, the first by name keeps it.
func peersOf(nodes []*v1.Node, self string) Peers {
	slices.SortFunc(nodes, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
	peers := Peers{Addresses: map[string]netip.Addr{}, Invalid: map[string]string{}}
	holder := map[netip.Addr]string{}
	for _, node := range nodes {
		value, ok := node.Annotations[Annotation]
		if !ok || node.Name == self {
			continue
		}
		addr, err := netip.ParseAddr(value)
		switch {
		case err != nil || addr.Zone() != "":
			peers.Invalid[node.Name] = fmt.Sprintf("annotation %s is %q, not an IP address", Annotation, value)
		case holder[addr.Unmap()] != "":
			peers.Invalid[node.Name] = fmt.Sprintf("annotation %s is %s, node %s's underlay address too", Annotation, addr, holder[addr.Unmap()])
		default:
			holder[addr.Unmap()] = node.Name
			peers.Addresses[node.Name] = addr.Unmap()
		}
	}
	return peers
}

// keepAnnotation slims a Node to what Watch reads, so the cache of a
// large cluster's Nodes stays small.
func keepAnnotation(obj any) (any, error) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return obj, nil
	}
	slim := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion}}
	if value, ok := node.Annotations[Annotation]; ok {
		slim.Annotations = map[string]string{Annotation: value}
	}
	return slim, nil
}
