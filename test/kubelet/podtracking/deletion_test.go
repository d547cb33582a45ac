package podtracking_test

import (
	"fmt"
	"os"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
)

// TestPodForgottenByKubeletAfterItsContainers deletes a pod in the order a
// real kubelet does: the pod's containers are removed while kubelet still
// lists it as active, and it leaves kubelet's active pods a moment later.
// The pod manager reconciles once an hour (trackerPeriod), so its DeletePod
// can only come from asking kubelet again after the containers went.
func TestPodForgottenByKubeletAfterItsContainers(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent(t)
	pod := e.runPod(t, "web", false)
	info := boundMemif(t, a, pod.spec)

	pod.docker.Remove(t, e.docker)
	e.waitTrackerCaughtUp(t, a, "after-web").Remove(t, e.docker)
	t.Run("kept while kubelet lists the pod", func(t *testing.T) {
		if a.pushed.Count(isDeleteOf(pod)) != 0 {
			t.Error("DeletePod pushed while kubelet lists the pod")
		}
		got, err := a.DeviceManager.GetPodMemifInfo(podID("web"))
		if err != nil || got.AllocationID != info.AllocationID {
			t.Errorf("GetPodMemifInfo = %v, %v; want allocation %s kept", got, err, info.AllocationID)
		}
		if _, err := os.Stat(info.HostDir); err != nil {
			t.Errorf("directory of a pod kubelet still lists: %v", err)
		}
	})

	e.kubelet.RemovePod(pod.spec.UID)
	t.Run("deleted and released once kubelet forgets it", func(t *testing.T) {
		a.pushed.WaitFor(t, waitTimeout, "DeletePod of web", isDeleteOf(pod))
		released(t, a, info)
	})
}

// isDeleteOf matches the DeletePod of the pod's incarnation.
func isDeleteOf(pod *kubePod) func(controllerapi.Event) bool {
	return func(event controllerapi.Event) bool {
		deletion, ok := event.(*podapi.DeletePod)
		return ok && deletion.Pod.ID == podID(pod.spec.Name) && deletion.Pod.UID == string(pod.spec.UID)
	}
}

// waitTrackerCaughtUp makes a Docker-only pod and waits until the tracker
// pushes its AddPod: Docker reports events in order and the tracker
// handles them in order, so by then it has handled every Docker event from
// before the call. It returns the marker pod for the caller to remove.
func (e *env) waitTrackerCaughtUp(tb testing.TB, a *agent, markerName string) *dockerd.Pod {
	tb.Helper()
	uid := "uid-" + markerName
	marker := dockerd.CreatePod(tb, e.docker, dockerd.PodSpec{Namespace: "marker", Name: markerName, UID: uid, Image: e.image})
	a.pushed.WaitFor(tb, waitTimeout, fmt.Sprintf("AddPod of marker pod %s", markerName), func(event controllerapi.Event) bool {
		add, ok := event.(*podapi.AddPod)
		return ok && add.Pod.UID == uid
	})
	return marker
}
