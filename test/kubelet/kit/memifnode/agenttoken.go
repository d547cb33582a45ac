package memifnode

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// ServiceAccount is the agent's service account, as the chart names it
// for release memif-agent in Namespace.
const ServiceAccount = "memif-agent"

// NewTokenPodOn creates a pod of the agent's service account on node, to
// bind a token to as kubelet binds the one it projects into the agent's
// pod: the token then names the node, which the chart's admission
// policies read. The pod never has to run; the token only needs the
// object.
func NewTokenPodOn(ctx context.Context, admin kubernetes.Interface, node string) (*authenticationv1.BoundObjectReference, error) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "memif-agent-", Namespace: Namespace},
		Spec: v1.PodSpec{NodeName: node, ServiceAccountName: ServiceAccount, AutomountServiceAccountToken: ptr.To(false),
			Containers: []v1.Container{{Name: "agent", Image: cluster.PauseImage, ImagePullPolicy: v1.PullNever}}},
	}
	pod, err := admin.CoreV1().Pods(Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the agent's pod on %s: %w", node, err)
	}
	return &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}, nil
}

// AgentClient is a client of c's API server with a token of the agent's
// service account from the TokenRequest API, bound to bound (nil: to
// nothing), so that requests are the agent's as RBAC and the admission
// policies see them.
func AgentClient(ctx context.Context, c *cluster.Cluster, admin kubernetes.Interface, bound *authenticationv1.BoundObjectReference) (kubernetes.Interface, error) {
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: bound}}
	token, err := admin.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, ServiceAccount, request, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request a token of %s/%s bound to %+v: %w", Namespace, ServiceAccount, bound, err)
	}
	adminConfig, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, err
	}
	config := rest.AnonymousClientConfig(adminConfig)
	config.BearerToken = token.Status.Token
	return kubernetes.NewForConfig(config)
}
