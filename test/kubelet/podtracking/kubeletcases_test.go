package podtracking_test

import (
	"errors"
	"os"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

// The cases kubelet's device manager creates on every node, each of which
// hands the agent, in Allocate, a device an allocation holds: kubelet is
// the authority, and the agent takes the device over.

// An init container asking for a memif hands its device on to the app
// container: kubelet calls Allocate for both, with the same device.
func TestInitContainerHandsItsMemifOn(t *testing.T) {
	e := newEnv(t)
	e.devices = 1
	a := e.startAgent(t)
	spec := kubelettest.NewPod("init", resource, 1, 1)
	initContainer := spec.Spec.Containers[0]
	initContainer.Name = "init"
	spec.Spec.InitContainers = []v1.Container{initContainer}
	spec.Spec.Containers = spec.Spec.Containers[1:]
	spec.Spec.Containers[0].Name = "c0"
	if err := e.kubelet.AllocatePod(e.ctx, spec); err != nil {
		t.Fatalf("kubelet did not admit a pod whose init container asks for a memif: %v", err)
	}
	initDevices, appDevices := e.kubelet.Devices(spec.UID, "init", resource), e.kubelet.Devices(spec.UID, "c0", resource)
	if len(appDevices) != 1 || !reflect.DeepEqual(initDevices, appDevices) {
		t.Fatalf("kubelet gave the init container %v and the app container %v, want the same one device", initDevices, appDevices)
	}
	pod := e.createContainers(t, spec, false)
	pod.docker.StartContainers(t, e.docker)
	info := boundMemif(t, a, spec)
	if got, want := answered(info), e.seenInContainer(t, pod); got != want || want.secret == "" {
		t.Errorf("agent answers %+v, the app container got %+v", got, want)
	}
	if held := a.DeviceManager.ListAllocations(); len(held) != 1 {
		t.Errorf("allocations = %v, want the app container's alone", held)
	}
}

// A completed pod (a Job) keeps its exited containers in the runtime while
// kubelet frees its devices and hands them to the next pod.
func TestCompletedPodsDeviceGoesToTheNextPod(t *testing.T) {
	e := newEnv(t)
	e.devices = 1
	a := e.startAgent(t)
	job := e.runPod(t, "job", false)
	jobMemif := boundMemif(t, a, job.spec)
	job.docker.StopContainers(t, e.docker)
	e.kubelet.RemovePod(job.spec.UID) // completed: no longer active

	next := e.runPod(t, "next", false)
	nextMemif := boundMemif(t, a, next.spec)
	released(t, a, jobMemif)
	if got, want := answered(nextMemif), e.seenInContainer(t, next); got != want || nextMemif.HostDir == jobMemif.HostDir || got.secret == answered(jobMemif).secret {
		t.Errorf("next pod: agent answers %+v, the container got %+v; the job had %+v", got, want, answered(jobMemif))
	}
	if _, err := os.Stat(nextMemif.HostDir); err != nil {
		t.Errorf("next pod's directory: %v", err)
	}
	var none *dmapi.NoMemifError
	if _, err := a.DeviceManager.GetPodMemifInfo(podID("job")); !errors.As(err, &none) {
		t.Errorf("GetPodMemifInfo(job) = %v, want a NoMemifError", err)
	}
}

// A pod deleted and re-created under the same name (a StatefulSet) gets a
// memif of its own, never the dead pod's socket or secret, and the dead
// pod's release leaves the new pod's directory alone.
func TestPodRecreatedUnderTheSameName(t *testing.T) {
	e := newEnv(t)
	e.devices = 1
	a := e.startAgent(t)
	first := e.runPod(t, "web", false)
	firstMemif := boundMemif(t, a, first.spec)

	e.deletePod(t, first)
	second := e.runPod(t, "web", false)
	secondMemif := boundMemif(t, a, second.spec)
	released(t, a, firstMemif)

	if got, want := answered(secondMemif), e.seenInContainer(t, second); got != want || secondMemif.HostDir == firstMemif.HostDir || got.secret == answered(firstMemif).secret {
		t.Errorf("re-created pod: agent answers %+v, the container got %+v; the deleted pod had %+v", got, want, answered(firstMemif))
	}
	info, err := a.DeviceManager.GetPodMemifInfo(podID("web"))
	if err != nil || info.PodUID != string(second.spec.UID) || info.HostDir != secondMemif.HostDir {
		t.Errorf("GetPodMemifInfo(web) = %v (uid %s), %v; want the re-created pod's (uid %s)", info, info.PodUID, err, second.spec.UID)
	}
	if _, err := os.Stat(secondMemif.HostDir); err != nil {
		t.Errorf("the re-created pod's directory after the deleted pod's release: %v", err)
	}
}
