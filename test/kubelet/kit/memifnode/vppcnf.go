package memifnode

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

const (
	// VPPImage is the VPP pod image (vppcnf.Image) as the node knows it
	// once ImportVPPImage imported it.
	VPPImage = "docker.io/library/memif-vppcnf:dev"
	// VPPContainerName is the container of VPPPod's pods.
	VPPContainerName = "vpp"
)

// ImportVPPImage builds the VPP pod image from this machine's VPP runtime
// (scripts/vpp.sh) and imports it into c's node.
func ImportVPPImage(ctx context.Context, c *cluster.Cluster) error {
	img, err := vppcnf.Image(VPPImage)
	if err != nil {
		return fmt.Errorf("memifnode: %w", err)
	}
	if err := c.ImportOCIImage(ctx, img); err != nil {
		return fmt.Errorf("memifnode: import %s: %w", VPPImage, err)
	}
	return nil
}

// VPPPod is a pod whose one container asks for a memif and runs VPP as its
// memif slave, configured from the memif.json the agent writes into the
// allocation's directory (/run/vpp/memif.json in the container).
// networks, when not empty, is the pod's memif.contivpp.io/networks
// annotation: a JSON list of memif specs, such as
// `[{"network":"red","mode":"ip","queues":2}]`.
func VPPPod(namespace, name, networks string) *v1.Pod {
	noToken := false
	requests := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("100m"),
		v1.ResourceMemory: resource.MustParse("256Mi"),
	}
	// VPP's resident memory is about 115 MiB (heap, 16384 buffers, the
	// stats segment, the memif regions).
	limits := v1.ResourceList{
		v1.ResourceMemory:             resource.MustParse("512Mi"),
		v1.ResourceName(ResourceName): resource.MustParse("1"),
	}
	var capabilities []v1.Capability
	for _, c := range vppcnf.Capabilities {
		capabilities = append(capabilities, v1.Capability(c))
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"memifnode": "vpp"}},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken:  &noToken,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []v1.Container{{
				Name:            VPPContainerName,
				Image:           VPPImage,
				ImagePullPolicy: v1.PullNever,
				Resources:       v1.ResourceRequirements{Requests: requests, Limits: limits},
				SecurityContext: &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: capabilities}},
			}},
		},
	}
	if networks != "" {
		pod.Annotations = map[string]string{memifspec.AnnotationKey: networks}
	}
	return pod
}

// PodVPP is the CLI of the VPP in a VPPPod, through kubectl exec.
func PodVPP(c *cluster.Cluster, namespace, pod string) vppcnf.CLI {
	return vppcnf.PodCLI(func(ctx context.Context, argv ...string) (string, error) {
		args := append([]string{"exec", "-n", namespace, pod, "-c", VPPContainerName, "--"}, argv...)
		return c.Kubectl(ctx, args...)
	})
}
