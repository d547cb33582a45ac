package memifnode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReachAPIServer points the agent's in-cluster client at the API server's
// own address, which rolls the DaemonSet's pod: the cluster runs no
// kube-proxy, so the kubernetes Service's IP leads nowhere, while the
// agent's host network reaches the API server where kubelet does. The
// service account token and CA stay the pod's. The DRA driver (k8s/dra)
// needs it.
func (n *Node) ReachAPIServer(ctx context.Context) error {
	server, err := url.Parse(n.c.Server())
	if err != nil {
		return fmt.Errorf("memifnode: %w", err)
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"memif-agent","env":[`+
		`{"name":"KUBERNETES_SERVICE_HOST","value":%q},{"name":"KUBERNETES_SERVICE_PORT","value":%q}]}]}}}}`, server.Hostname(), server.Port())
	if _, err := n.client.AppsV1().DaemonSets(Namespace).Patch(ctx, DaemonSet, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("memifnode: point the agent at the API server: %w", err)
	}
	return nil
}

// VPPClaimPod is VPPPod asking for its memif through DRA: the pod's claim
// is made from the ResourceClaimTemplate template (in the pod's
// namespace), whose opaque MemifConfig, if any, says what the memif is.
func VPPClaimPod(namespace, name, template string) *v1.Pod {
	pod := VPPPod(namespace, name, "")
	container := &pod.Spec.Containers[0]
	delete(container.Resources.Limits, v1.ResourceName(ResourceName))
	container.Resources.Claims = []v1.ResourceClaim{{Name: "memif"}}
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "memif", ResourceClaimTemplateName: &template}}
	return pod
}

// ContainerEnv returns the env containerd gave the first container of a
// running pod (its OCI spec, through ctr): what the kubelet and the CDI
// devices of its claims put there.
func (n *Node) ContainerEnv(ctx context.Context, namespace, name string) (map[string]string, error) {
	pod, err := n.PodRunning(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if len(pod.Status.ContainerStatuses) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no container status yet", namespace, name)
	}
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := n.c.Ctr(ctx, "containers", "info", id)
	if err != nil {
		return nil, fmt.Errorf("memifnode: %w", err)
	}
	var info struct {
		Spec struct {
			Process struct {
				Env []string `json:"env"`
			} `json:"process"`
		} `json:"Spec"`
	}
	// ctr's output may start with lines of containerd's warnings (stderr).
	start := 0
	if !strings.HasPrefix(out, "{") {
		if start = strings.Index(out, "\n{") + 1; start == 0 {
			return nil, fmt.Errorf("memifnode: ctr containers info %s printed no JSON: %q", id, out)
		}
	}
	if err := json.NewDecoder(strings.NewReader(out[start:])).Decode(&info); err != nil {
		return nil, fmt.Errorf("memifnode: decode ctr containers info %s: %w", id, err)
	}
	env := map[string]string{}
	for _, kv := range info.Spec.Process.Env {
		key, value, _ := strings.Cut(kv, "=")
		env[key] = value
	}
	return env, nil
}
