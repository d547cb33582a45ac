package podmanager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ligato/vpp-agent/plugins/kvscheduler"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/controller"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
)

// podEvents is a controller event handler that forwards pod events.
type podEvents chan controllerapi.Event

func (c podEvents) String() string { return "pod-events" }
func (c podEvents) HandlesEvent(event controllerapi.Event) bool {
	switch event.(type) {
	case *podapi.AddPod, *podapi.DeletePod, *podapi.LivePods:
		return true
	}
	return false
}
func (c podEvents) Resync(controllerapi.Event, controllerapi.EventOperations) error {
	return nil
}
func (c podEvents) Update(event controllerapi.Event, _ controllerapi.EventOperations) (string, error) {
	c <- event
	return "", nil
}
func (c podEvents) Revert(controllerapi.Event) error { return nil }

// TestPluginInAgent runs the plugin with the real controller plugin and KV
// scheduler against a private dockerd, in the order the agent runs them.
func TestPluginInAgent(t *testing.T) {
	daemon := dockerd.Start(t)
	client := daemon.Client(t)
	image := dockerd.ImportSleeperImage(t, client)
	path := filepath.Join(t.TempDir(), "podmanager.conf")
	config := "docker-endpoint: " + daemon.Endpoint() + "\npod-resources-socket: \"\"\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	events := make(podEvents, 16)
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) { deps.HTTPHandlers = nil }))
	ctrl := controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
		deps.KVScheduler = scheduler
		deps.EventHandlers = []controllerapi.EventHandler{events}
	}))
	pm := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = configfile.File(path)
		deps.EventLoop = ctrl
	}))
	for _, step := range []func() error{scheduler.Init, ctrl.Init, pm.Init, ctrl.AfterInit, pm.AfterInit} {
		if err := step(); err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	t.Cleanup(func() {
		for _, closer := range []func() error{pm.Close, ctrl.Close, scheduler.Close} {
			if err := closer(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})

	pod := dockerd.RunPod(t, client, dockerd.PodSpec{Namespace: "default", Name: "web", UID: "uid-web", Image: image})
	waitEvent(t, events, "AddPod default/web (uid uid-web)")
	pm.RequestLivePods()
	waitEvent(t, events, "LivePods (pods: 1)")
	if err := pm.PodSourcesAnswer(); err != nil {
		t.Errorf("PodSourcesAnswer = %v, want nil: Docker answers", err)
	}
	pod.Remove(t, client)
	waitEvent(t, events, "DeletePod default/web (uid uid-web)")
	pm.RequestLivePods()
	waitEvent(t, events, "LivePods (pods: 0)")
}

func waitEvent(t *testing.T, events podEvents, want string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case event := <-events:
			if event.String() == want {
				return
			}
		case <-deadline:
			t.Fatalf("no event %q", want)
		}
	}
}

func TestInitRefusesInvalidConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podmanager.conf")
	if err := os.WriteFile(path, []byte("reconcile-period: -1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pm := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = configfile.File(path)
		deps.EventLoop = controller.NewPlugin()
	}))
	if err := pm.Init(); err == nil || !strings.Contains(err.Error(), "reconcile-period") {
		t.Fatalf("Init error = %v, want one naming reconcile-period", err)
	}
}
