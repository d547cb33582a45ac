package podtracking_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	docker "github.com/fsouza/go-dockerclient"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
)

// seenByPod is what the pod's process sees of its memif, and what the agent
// must answer for the pod.
type seenByPod struct{ socket, secret string }

func (e *env) seenInContainer(t *testing.T, pod *kubePod) seenByPod {
	t.Helper()
	container, err := e.docker.InspectContainerWithOptions(docker.InspectContainerOptions{ID: pod.docker.ContainerIDs["c0"]})
	if err != nil {
		t.Fatalf("inspect container of %s: %v", pod.spec.Name, err)
	}
	seen := seenByPod{}
	for _, env := range container.Config.Env {
		switch {
		case len(env) > len(dmapi.EnvMemifSocket) && env[:len(dmapi.EnvMemifSocket)+1] == dmapi.EnvMemifSocket+"=":
			seen.socket = env[len(dmapi.EnvMemifSocket)+1:]
		case len(env) > len(dmapi.EnvMemifSecret) && env[:len(dmapi.EnvMemifSecret)+1] == dmapi.EnvMemifSecret+"=":
			seen.secret = env[len(dmapi.EnvMemifSecret)+1:]
		}
	}
	return seen
}

func answered(info dmapi.MemifInfo) seenByPod {
	return seenByPod{socket: info.ContainerSocket, secret: info.Secret}
}

// TestPodLifecycle follows one pod from admission to deletion: the agent
// answers GetPodMemifInfo with what the container got, before and after
// its containers start, and releases everything when the pod goes.
func TestPodLifecycle(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent(t)
	spec := e.admit(t, "web")

	var admitted dmapi.MemifInfo
	t.Run("just admitted, no container yet", func(t *testing.T) {
		var err error
		if admitted, err = a.DeviceManager.GetPodMemifInfo(podID("web")); err != nil {
			t.Fatalf("GetPodMemifInfo: %v", err)
		}
		want := e.kubelet.Devices(spec.UID, "c0", resource)
		if !reflect.DeepEqual(admitted.DeviceIDs, want) {
			t.Errorf("device IDs = %v, kubelet assigned %v", admitted.DeviceIDs, want)
		}
	})
	pod := e.createContainers(t, spec, false)
	t.Run("containers created, not started", func(t *testing.T) {
		info := boundMemif(t, a, spec)
		if got, want := answered(info), e.seenInContainer(t, pod); got != want || want.secret == "" {
			t.Errorf("agent answers %+v, the container got %+v", got, want)
		}
		if info.AllocationID != admitted.AllocationID {
			t.Errorf("bound allocation %s, answered %s at admission", info.AllocationID, admitted.AllocationID)
		}
	})
	pod.docker.StartContainers(t, e.docker)
	var running dmapi.MemifInfo
	t.Run("containers running", func(t *testing.T) {
		var err error
		if running, err = a.DeviceManager.GetPodMemifInfo(podID("web")); err != nil {
			t.Fatalf("GetPodMemifInfo: %v", err)
		}
		if got, want := answered(running), e.seenInContainer(t, pod); got != want {
			t.Errorf("agent answers %+v, the container got %+v", got, want)
		}
		if running.PodUID != string(spec.UID) || running.ContainerName != "c0" {
			t.Errorf("bound to uid %q container %q, want %q c0", running.PodUID, running.ContainerName, spec.UID)
		}
	})
	t.Run("deleted pod releases directory and devices", func(t *testing.T) {
		e.deletePod(t, pod)
		released(t, a, running)
		_, err := a.DeviceManager.GetPodMemifInfo(podID("web"))
		var none *dmapi.NoMemifError
		if !errors.As(err, &none) {
			t.Errorf("GetPodMemifInfo after deletion = %v, want a NoMemifError", err)
		}
		again := e.admit(t, "again")
		if got := e.kubelet.Devices(again.UID, "c0", resource); len(got) != 1 {
			t.Fatalf("kubelet assigned %v to the next pod", got)
		}
		if _, err := a.DeviceManager.GetPodMemifInfo(podID("again")); err != nil {
			t.Errorf("next pod got no memif after the release: %v", err)
		}
	})
}

// TestAgentRestartKeepsBindings restarts the agent while 20 pods run: every
// pod keeps the same socket and secret.
func TestAgentRestartKeepsBindings(t *testing.T) {
	const pods = 20
	e := newEnv(t)
	a := e.startAgent(t)
	before := map[string]dmapi.MemifInfo{}
	for i := range pods {
		pod := e.runPod(t, fmt.Sprintf("pod-%02d", i), false)
		before[pod.spec.Name] = boundMemif(t, a, pod.spec)
	}

	a.Stop()
	a = e.startAgent(t)

	for name, want := range before {
		t.Run(name, func(t *testing.T) {
			got, err := a.DeviceManager.GetPodMemifInfo(podID(name))
			if err != nil {
				t.Fatalf("GetPodMemifInfo after restart: %v", err)
			}
			if got.HostSocket != want.HostSocket || got.Secret != want.Secret || got.PodUID != want.PodUID {
				t.Errorf("after restart: socket %s uid %s (secret same: %v); before: socket %s uid %s",
					got.HostSocket, got.PodUID, got.Secret == want.Secret, want.HostSocket, want.PodUID)
			}
		})
	}
	if n := len(a.DeviceManager.ListAllocations()); n != pods {
		t.Errorf("%d allocations after restart, want %d", n, pods)
	}
}

// TestDockerRestartLosesNoDelete removes a pod while dockerd is down:
// Docker removes the auto-remove containers it finds stopped when it starts,
// before its API answers, so no event tells the agent. The listing after
// the agent reconnects must.
func TestDockerRestartLosesNoDelete(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent(t)
	gone := e.runPod(t, "gone", true)
	kept := e.runPod(t, "kept", false)
	goneInfo := boundMemif(t, a, gone.spec)
	keptInfo := boundMemif(t, a, kept.spec)
	e.kubelet.RemovePod(gone.spec.UID)

	e.daemon.Restart(t)

	released(t, a, goneInfo)
	got, err := a.DeviceManager.GetPodMemifInfo(podID("kept"))
	if err != nil || got.HostSocket != keptInfo.HostSocket || got.Secret != keptInfo.Secret {
		t.Errorf("pod that survived the restart: %v, %v; want its binding unchanged (%v)", got, err, keptInfo)
	}
}

// TestPodDeletedWhileAgentDown deletes a pod while the agent is stopped;
// the agent collects it when it starts and keeps the other.
func TestPodDeletedWhileAgentDown(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent(t)
	gone := e.runPod(t, "gone", false)
	kept := e.runPod(t, "kept", false)
	goneInfo := boundMemif(t, a, gone.spec)
	keptInfo := boundMemif(t, a, kept.spec)

	a.Stop()
	e.deletePod(t, gone)
	a = e.startAgent(t)

	released(t, a, goneInfo)
	got, err := a.DeviceManager.GetPodMemifInfo(podID("kept"))
	if err != nil || got.HostSocket != keptInfo.HostSocket || got.Secret != keptInfo.Secret {
		t.Errorf("pod kept across the agent restart: %v, %v; want its binding unchanged (%v)", got, err, keptInfo)
	}
}
