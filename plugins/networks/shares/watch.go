package shares

import (
	"context"
	"fmt"
	"maps"
	"net/netip"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/internal/kubeclient"
)

// Held are the shares the nodes hold: by network, each node's share.
type Held map[string]map[string]netip.Prefix

// Equal tells whether h and o hold the same shares.
func (h Held) Equal(o Held) bool {
	return maps.EqualFunc(h, o, func(a, b map[string]netip.Prefix) bool { return maps.Equal(a, b) })
}

// Watch calls report with the shares held in namespace once the Leases
// are listed, then each time they change (a share claimed, released, or
// freed with its Node), until ctx ends; it returns nil then. A node routes
// to the others' shares from it. report runs on Watch's goroutine, one
// call at a time. The client needs list and watch on leases in namespace.
func Watch(ctx context.Context, client kubernetes.Interface, namespace string, report func(Held)) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(options *metav1.ListOptions) { options.LabelSelector = LabelNetwork }))
	leases := factory.Coordination().V1().Leases()
	err := kubeclient.Follow(ctx, factory, leases.Informer(), func() (Held, error) {
		listed, err := leases.Lister().Leases(namespace).List(labels.Everything())
		return heldBy(listed), err
	}, Held.Equal, report)
	if err != nil {
		return fmt.Errorf("watch the shares' Leases in namespace %s: %w", namespace, err)
	}
	return nil
}

// heldBy reads the shares leases hold; a Lease without a holder or a
// share prefix is left out.
func heldBy(leases []*coordinationv1.Lease) Held {
	held := Held{}
	for _, lease := range leases {
		network, node := lease.Labels[LabelNetwork], holder(*lease)
		share, err := netip.ParsePrefix(lease.Annotations[AnnotationShare])
		if network == "" || node == "" || err != nil {
			continue
		}
		if held[network] == nil {
			held[network] = map[string]netip.Prefix{}
		}
		held[network][node] = share
	}
	return held
}
