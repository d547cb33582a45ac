package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// TestClaimsReadAheadOfKubelet: the driver follows its node's pods through
// the real API server and reads the claim of each as the pod is bound, a
// claim from a template (named in the pod's status) and a claim named in
// the pod's spec; kubelet's NodePrepareResources gets that copy. A claim
// deleted and made again under the same name, with a new pod, is prepared
// as the new claim.
func TestClaimsReadAheadOfKubelet(t *testing.T) {
	c, client := startCluster(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx := t.Context()
	calls := &callTimes{byMethod: map[string][]time.Duration{}, readEnds: map[string]time.Time{}}
	a := startAgentWith(t, c, timedClaimReads{client, calls}, claimsOnly(), calls.intercept)

	createPod(ctx, t, client, podOf("from-template", cluster.PauseImage, nil, true))
	waitRunning(ctx, t, client, "from-template")
	if ahead := len(calls.of(claimReadAhead)); ahead != 1 {
		t.Errorf("the driver read %d claims ahead of kubelet for a pod with a claim from a template, want 1", ahead)
	}
	t.Logf("claims read during kubelet's calls: %d (0 unless kubelet called before the pod's watch event came)", len(calls.of(claimReadInCall)))
	deletePod(ctx, t, client, "from-template")

	first := createClaim(ctx, t, client, "by-name")
	createPod(ctx, t, client, podWithClaim("first", "by-name"))
	waitRunning(ctx, t, client, "first")
	// Not a count: the claim of from-template may be read again, when the
	// new claim got its device before its release (a prepare finding
	// its device held checks the holder with the API server).
	if !calls.readAheadOf(namespace + "/by-name") {
		t.Errorf("the driver did not read claim by-name ahead of kubelet for a pod naming it in its spec")
	}
	deletePod(ctx, t, client, "first")
	if err := client.ResourceV1().ResourceClaims(namespace).Delete(ctx, "by-name", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "claim by-name deleted", func() error {
		if _, err := client.ResourceV1().ResourceClaims(namespace).Get(ctx, "by-name", metav1.GetOptions{}); err == nil {
			return errors.New("still there")
		}
		return nil
	})
	second := createClaim(ctx, t, client, "by-name")
	createPod(ctx, t, client, podWithClaim("second", "by-name"))
	waitRunning(ctx, t, client, "second")
	prepared, err := a.DeviceManager.ClaimPreparer().PreparedClaims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(prepared, func(ref dmapi.ClaimRef) bool { return ref.UID == string(second.UID) }) ||
		slices.ContainsFunc(prepared, func(ref dmapi.ClaimRef) bool { return ref.UID == string(first.UID) }) {
		t.Errorf("prepared claims %+v, want the claim made again (%s) and not the first (%s)", prepared, second.UID, first.UID)
	}
}

// TestClaimPreparedAheadIsReleasedWhenItsPodGoes: the claim of a pod is
// prepared (allocation, CDI spec) as the pod is bound, while kubelet has
// not asked: the pod's volume cannot be mounted (its ConfigMap does not
// exist), and kubelet asks for the pod's claims only once its volumes are
// mounted. The pod is deleted without kubelet ever asking, so kubelet
// will not unprepare the claim: the driver releases it.
func TestClaimPreparedAheadIsReleasedWhenItsPodGoes(t *testing.T) {
	c, client := startCluster(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx := t.Context()
	calls := &callTimes{byMethod: map[string][]time.Duration{}, readEnds: map[string]time.Time{}}
	a := startAgentWith(t, c, client, claimsOnly(), calls.intercept)

	pod := podOf("stuck", cluster.PauseImage, nil, true)
	pod.Spec.Volumes = []corev1.Volume{{Name: "missing", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "does-not-exist"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/missing"}}
	createPod(ctx, t, client, pod)
	var memif dmapi.MemifInfo
	var spec string
	poll.Until(t, waitLimit, "the claim of pod stuck prepared ahead of kubelet, its CDI spec written", func() error {
		var err error
		if memif, err = a.DeviceManager.GetPodMemifInfo(podapi.PodID{Namespace: namespace, Name: "stuck"}); err != nil {
			return err
		}
		prepared, err := a.DeviceManager.ClaimPreparer().PreparedClaims(ctx)
		if err != nil || len(prepared) != 1 {
			return fmt.Errorf("prepared claims %+v, %v; want the pod's", prepared, err)
		}
		spec = c.HostPath("/var/run/cdi/" + claims.CDISpecName(prepared[0].UID))
		_, err = os.Stat(spec)
		return err
	})
	if asked := len(calls.of("NodePrepareResources")); asked != 0 {
		t.Fatalf("kubelet asked to prepare %d times for a pod whose volume cannot be mounted; the test needs it not to ask", asked)
	}

	// The CDI spec's removal is the driver's own release: the pod
	// tracker's DeletePod would release the memif, but not the spec.
	deletePod(ctx, t, client, "stuck")
	poll.Until(t, waitLimit, "the claim of the deleted pod released", func() error {
		if _, err := a.DeviceManager.GetPodMemifInfo(podapi.PodID{Namespace: namespace, Name: "stuck"}); err == nil {
			return errors.New("the pod's memif still held")
		}
		for _, path := range []string{memif.HostDir, spec} {
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s: %v", path, err)
			}
		}
		return nil
	})
	if asked := len(calls.of("NodePrepareResources")) + len(calls.of("NodeUnprepareResources")); asked != 0 {
		t.Errorf("kubelet made %d prepare or unprepare calls for the pod; want none", asked)
	}
}

// createClaim makes a claim of one memif of the driver.
func createClaim(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) *resourceapi.ResourceClaim {
	t.Helper()
	claim, err := client.ResourceV1().ResourceClaims(namespace).Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "memif", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: claims.DefaultDriverName}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create claim %s: %v", name, err)
	}
	return claim
}

// podWithClaim is a pause pod using the claim named claim.
func podWithClaim(name, claim string) *corev1.Pod {
	pod := podOf(name, cluster.PauseImage, nil, true)
	pod.Spec.ResourceClaims[0] = corev1.PodResourceClaim{Name: "memif", ResourceClaimName: ptr.To(claim)}
	return pod
}

// deletePod deletes the pod name and waits until it is gone.
func deletePod(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	if err := client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, name+" gone", func() error {
		if _, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("%s still there", name)
		}
		return nil
	})
}
