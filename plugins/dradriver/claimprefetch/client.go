package claimprefetch

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
	"k8s.io/client-go/util/watchlist"
)

// Client is the client c reads with, except that a ResourceClaims(ns).Get
// without options hands out the claim c read ahead, once, when it may
// still be current (see the package doc); otherwise it reads the API
// server. Give it to kubeletplugin (kubeletplugin.KubeClient).
func (c *Claims) Client() kubernetes.Interface {
	return client{c.client, c}
}

type client struct {
	kubernetes.Interface
	claims *Claims
}

func (c client) ResourceV1() resourcev1.ResourceV1Interface {
	return resourceV1{c.Interface.ResourceV1(), c.claims}
}

// IsWatchListSemanticsUnSupported passes on what the wrapped client says
// (client-go's fake clientset says true), which informers ask by a type
// assertion the embedded interface would hide.
func (c client) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Interface)
}

type resourceV1 struct {
	resourcev1.ResourceV1Interface
	claims *Claims
}

func (r resourceV1) ResourceClaims(namespace string) resourcev1.ResourceClaimInterface {
	return resourceClaims{r.ResourceV1Interface.ResourceClaims(namespace), namespace, r.claims}
}

type resourceClaims struct {
	resourcev1.ResourceClaimInterface
	namespace string
	claims    *Claims
}

func (r resourceClaims) Get(ctx context.Context, name string, options metav1.GetOptions) (*resourceapi.ResourceClaim, error) {
	if options == (metav1.GetOptions{}) {
		if claim := r.claims.take(ctx, types.NamespacedName{Namespace: r.namespace, Name: name}); claim != nil {
			return claim, nil
		}
	}
	return r.ResourceClaimInterface.Get(ctx, name, options)
}
