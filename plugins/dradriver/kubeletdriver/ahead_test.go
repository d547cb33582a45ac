package kubeletdriver_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// boundPod is the pending pod name, bound to the node, using the claim
// claimName; the claim allocate makes is reserved for it.
func boundPod(name string, uid types.UID, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: claimNS, Name: name, UID: uid},
		Spec: corev1.PodSpec{NodeName: nodeName, ResourceClaims: []corev1.PodResourceClaim{
			{Name: "memif", ResourceClaimName: ptr.To(claim)}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// holds says whether the node holds the claim with uid.
func (n *node) holds(t *testing.T, uid string) bool {
	t.Helper()
	prepared, err := n.dm.PreparedClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(prepared, func(ref dmapi.ClaimRef) bool { return ref.UID == uid })
}

// waitPreparedAhead waits until the node holds the claim with uid and its
// CDI spec is written, with no call of kubelet's, and returns the memif of
// pod, the claim's.
func (n *node) waitPreparedAhead(t *testing.T, uid, pod string) dmapi.MemifInfo {
	t.Helper()
	poll.Until(t, waitLimit, "claim "+uid+" prepared ahead of kubelet", func() error {
		if !n.holds(t, uid) {
			return errors.New("not held")
		}
		_, err := os.Stat(filepath.Join(n.cfg.CDIDir, claims.CDISpecName(uid)))
		return err
	})
	memif, err := n.dm.GetPodMemifInfo(podapi.PodID{Namespace: claimNS, Name: pod})
	if err != nil {
		t.Fatalf("the memif of pod %s, prepared ahead: %v", pod, err)
	}
	return memif
}

// waitReleased waits until the node holds nothing of the claim with uid
// and its CDI spec is gone.
func (n *node) waitReleased(t *testing.T, uid string) {
	t.Helper()
	poll.Until(t, waitLimit, "claim "+uid+" released", func() error {
		if n.holds(t, uid) {
			return errors.New("still held")
		}
		if _, err := os.Stat(filepath.Join(n.cfg.CDIDir, claims.CDISpecName(uid))); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("CDI spec: %v", err)
		}
		return nil
	})
}

// TestPreparedAhead: the claim of a pod bound to the node is prepared
// (allocation, CDI spec) before kubelet asks, and kubelet's
// NodePrepareResources gets that allocation. A claim kubelet took is
// kubelet's to unprepare; one whose pod ends before kubelet asked (deleted,
// or failed as after a refused admission) is released by the driver.
func TestPreparedAhead(t *testing.T) {
	for _, tc := range []struct {
		// name is short: the driver's socket is under t.TempDir.
		name string
		// kubeletAsks: kubelet's call comes after the prepare ahead
		// ("after"), as soon as the pod is created, before or while the
		// driver prepares, whichever the scheduling makes it ("at once":
		// either way one allocation), or never ("").
		kubeletAsks string
		// end ends the pod after that; nil: it runs on.
		end          func(ctx context.Context, n *node, pod *corev1.Pod) error
		wantReleased bool
	}{
		{name: "taken", kubeletAsks: "after", end: deletePod},
		{name: "at once", kubeletAsks: "at once"},
		{name: "deleted", end: deletePod, wantReleased: true},
		{name: "failed", end: failPod, wantReleased: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t)
			ctx := t.Context()
			n.allocate(t, claimUID, claimName, "memif-dra-001")
			pod, err := n.apiServer.CoreV1().Pods(claimNS).Create(ctx, boundPod("dpdk", podUID, claimName), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.kubeletAsks == "at once" {
				if got := n.prepare(t, claimUID, claimName); got.GetError() != "" || len(got.Devices) != 1 {
					t.Fatalf("NodePrepareResources as the pod was bound = %v", got)
				}
			}
			ahead := n.waitPreparedAhead(t, claimUID, "dpdk")
			if tc.kubeletAsks != "" {
				got := n.prepare(t, claimUID, claimName)
				if got.GetError() != "" || len(got.Devices) != 1 || got.Devices[0].DeviceName != "memif-dra-001" ||
					!slices.Equal(got.Devices[0].CdiDeviceIds, []string{claims.CDIDeviceID(claimUID, requestName)}) {
					t.Fatalf("NodePrepareResources = %v, want memif-dra-001 as prepared ahead", got)
				}
			}
			if held := n.dm.ListAllocations(); len(held) != 1 || held[0].AllocationID != ahead.AllocationID || held[0].Secret != ahead.Secret {
				t.Errorf("the node holds %d allocations, want the one prepared ahead (%s)", len(held), ahead.AllocationID)
			}
			if tc.end == nil {
				return
			}
			if err := tc.end(ctx, n, pod); err != nil {
				t.Fatal(err)
			}
			if tc.wantReleased {
				n.waitReleased(t, claimUID)
				if msg := n.unprepare(t, claimUID, claimName); msg != "" {
					t.Errorf("kubelet unpreparing the released claim: %s, want success", msg)
				}
				return
			}
			// The driver handles the node's pods in order: once a later
			// pod's claim is prepared ahead, the end was seen.
			const laterClaim = "6f1c2a4e-1b2c-4d5e-8f90-0123456789ac"
			n.allocateWith(t, laterClaim, "later", func(c *resourceapi.ResourceClaim) {
				c.Status.ReservedFor[0].Name, c.Status.ReservedFor[0].UID = "later", "later-pod"
			}, "memif-dra-002")
			if _, err := n.apiServer.CoreV1().Pods(claimNS).Create(ctx, boundPod("later", "later-pod", "later"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			n.waitPreparedAhead(t, laterClaim, "later")
			if !n.holds(t, claimUID) {
				t.Errorf("the claim kubelet took was released when its pod was deleted; kubelet unprepares it")
			}
		})
	}
}

func deletePod(ctx context.Context, n *node, pod *corev1.Pod) error {
	return n.apiServer.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
}

func failPod(ctx context.Context, n *node, pod *corev1.Pod) error {
	pod.Status.Phase = corev1.PodFailed
	_, err := n.apiServer.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// TestPodEnded: when a pod ends, a claim is released only if the driver
// prepared it ahead and kubelet never asked for it. A claim kubelet asked
// for is kubelet's to unprepare; one the device manager held before the
// driver read it (kubelet asked the agent before its restart) is left as
// it is, even when its pod is force-deleted. A read that comes after
// its pod ended prepares nothing.
func TestPodEnded(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs before the driver reads the claim, after runs
		// after.
		before, after func(t *testing.T, n *node, claim *resourceapi.ResourceClaim, pod *corev1.Pod)
		phase         corev1.PodPhase
		wantReleased  bool
	}{
		{name: "pending", phase: corev1.PodPending, wantReleased: true},
		{name: "refused", phase: corev1.PodFailed, wantReleased: true},
		{name: "taken", phase: corev1.PodPending, after: kubeletPrepares},
		{name: "asked", phase: corev1.PodRunning, before: kubeletPrepares},
		{name: "restart", phase: corev1.PodRunning, before: func(t *testing.T, n *node, claim *resourceapi.ResourceClaim, pod *corev1.Pod) {
			kubeletPrepares(t, n, claim, pod)
			n.driver.Stop()
			n.startDriver(t)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t)
			ctx := t.Context()
			claim := n.allocate(t, claimUID, claimName, "memif-dra-001")
			pod := boundPod("dpdk", podUID, claimName)
			pod.Status.Phase = tc.phase
			if tc.before != nil {
				tc.before(t, n, claim, pod)
			}
			n.driver.ClaimRead(ctx, podUID, claim)
			if !n.holds(t, claimUID) {
				t.Fatal("the claim is not held after it was read")
			}
			if tc.after != nil {
				tc.after(t, n, claim, pod)
			}
			n.driver.PodEnded(ctx, pod)
			if tc.wantReleased {
				n.waitReleased(t, claimUID)
				return
			}
			// Removing the CDI spec is the release's last step, done
			// before PodEnded returns.
			if _, err := os.Stat(filepath.Join(n.cfg.CDIDir, claims.CDISpecName(claimUID))); err != nil || !n.holds(t, claimUID) {
				t.Errorf("after its pod ended the claim is held: %v, its CDI spec: %v; want both kept", n.holds(t, claimUID), err)
			}
		})
	}
	t.Run("read after", func(t *testing.T) {
		n := startNode(t)
		claim := n.allocate(t, claimUID, claimName, "memif-dra-001")
		n.driver.PodEnded(t.Context(), boundPod("dpdk", podUID, claimName))
		n.driver.ClaimRead(t.Context(), podUID, claim)
		if n.holds(t, claimUID) {
			t.Error("a claim read after its pod ended was prepared")
		}
	})
}

// kubeletPrepares is kubelet's NodePrepareResources for the claim.
func kubeletPrepares(t *testing.T, n *node, claim *resourceapi.ResourceClaim, _ *corev1.Pod) {
	if got := n.prepare(t, string(claim.UID), claim.Name); got.GetError() != "" {
		t.Fatalf("NodePrepareResources: %s", got.GetError())
	}
}
