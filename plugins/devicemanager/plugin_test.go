package devicemanager

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ligato/vpp-agent/plugins/kvscheduler"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/controller"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

func writeConfig(t *testing.T, content string) configfile.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "devicemanager.conf")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return configfile.File(path)
}

// startAgent runs the device manager plugin with the real controller plugin
// and KV scheduler, in the order the agent runs them.
func startAgent(t *testing.T, cfg configfile.File) *Plugin {
	t.Helper()
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) { deps.HTTPHandlers = nil }))
	var ctrl *controller.Plugin
	dm := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = cfg
		deps.EventLoop = controllerLoop{&ctrl}
	}))
	ctrl = controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
		deps.KVScheduler = scheduler
		deps.EventHandlers = []controllerapi.EventHandler{dm}
	}))
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"scheduler Init", scheduler.Init}, {"controller Init", ctrl.Init}, {"devicemanager Init", dm.Init},
		{"controller AfterInit", ctrl.AfterInit}, {"devicemanager AfterInit", dm.AfterInit},
	} {
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	t.Cleanup(func() {
		for _, closer := range []func() error{dm.Close, ctrl.Close, scheduler.Close} {
			if err := closer(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return dm
}

// controllerLoop lets the device manager be created before the controller
// it pushes into, as main does through UseDeps.
type controllerLoop struct{ plugin **controller.Plugin }

func (l controllerLoop) PushEvent(event controllerapi.Event) error {
	return (*l.plugin).PushEvent(event)
}

func TestPluginInAgent(t *testing.T) {
	dir := t.TempDir()
	pluginDir := filepath.Join(dir, "device-plugins")
	if err := os.MkdirAll(pluginDir, 0o750); err != nil {
		t.Fatal(err)
	}
	registry, err := fakekubelet.Start(pluginDir, "kubelet.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(registry.Stop)
	dm := startAgent(t, writeConfig(t, "device-count: 4\nplugin-dir: "+pluginDir+"\nsocket-root: "+dir+"/memif\ncheckpoint-path: "+dir+"/cp.json\ndevice-info-dir: "+dir+"/devinfo\n"))

	var kubelet pluginapi.DevicePluginClient
	select {
	case r := <-registry.Registrations():
		kubelet = r.Client
	case <-time.After(20 * time.Second):
		t.Fatal("the device manager plugin did not register")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	response, err := kubelet.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"memif-003"}}}})
	if err != nil {
		t.Fatalf("Allocate through the controller: %v", err)
	}
	container := response.ContainerResponses[0]
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "u"}
	evidence := podapi.PodContainer{Name: "app", Annotations: map[string]string{dmapi.AnnotationSocketHost: container.Annotations[dmapi.AnnotationSocketHost]}}
	if err := dm.EventLoop.PushEvent(&podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{evidence}}); err != nil {
		t.Fatal(err)
	}
	var info dmapi.MemifInfo
	poll.Until(t, 20*time.Second, "binding the pod", func() (err error) {
		info, err = dm.GetPodMemifInfo(pod.ID)
		return err
	})
	if info.Secret != container.Envs[dmapi.EnvMemifSecret] || info.HostDir != container.Mounts[0].HostPath {
		t.Errorf("GetPodMemifInfo = %v, want the allocation kubelet got", info)
	}
}

func TestPluginRefusesInvalidConfig(t *testing.T) {
	dm := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = writeConfig(t, "device-count: 0\n")
		deps.EventLoop = controllerLoop{}
	}))
	err := dm.Init()
	if err == nil || !strings.Contains(err.Error(), `config key "device-count": must be 1..65536, got 0`) {
		t.Errorf("Init with device-count 0 = %v, want an error naming the key", err)
	}
}

// TestPluginRefusesAPodUIDThatIsNotOne: $POD_UID names the agent's kubelet
// sockets, so one that is not a pod UID stops the agent before it takes
// the node or listens anywhere, naming it.
func TestPluginRefusesAPodUIDThatIsNotOne(t *testing.T) {
	t.Setenv(dmapi.PodUIDEnv, "../device-plugins/kubelet")
	dm := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = writeConfig(t, "checkpoint-path: "+filepath.Join(t.TempDir(), "checkpoint.json")+"\n")
		deps.EventLoop = controllerLoop{}
	}))
	err := dm.Init()
	if want := `$POD_UID (the agent pod's metadata.uid): pod UID "../device-plugins/kubelet" refused`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Init with POD_UID ../device-plugins/kubelet = %v, want an error saying %q", err, want)
	}
}
