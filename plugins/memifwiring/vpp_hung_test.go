package memifwiring_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/devicehealth"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
	"github.com/contivpp/memif-agent/plugins/health"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/syncbuffer"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// hungVswitchConf bounds each VPP call, and so the wait for a ping a
// stopped VPP leaves unanswered, to a second: the vswitch plugin soon
// drops the connection to a stopped VPP.
const hungVswitchConf = "request-timeout: 1s\nhealth-check-period: 100ms\nlink-check-period: 50ms\n"

// patientVswitchConf lets each VPP call wait two minutes: a call to a
// stopped VPP waits until it runs again.
const patientVswitchConf = "request-timeout: 2m\nhealth-check-period: 100ms\nlink-check-period: 50ms\n"

// admissionLimit bounds an Allocate in these tests: far below what a VPP
// call may wait under patientVswitchConf (and below commit-timeout), far
// above what an Allocate takes on a busy machine. A failure bound only.
const admissionLimit = 20 * time.Second

// hungGrace is the vswitch-health-grace of these tests.
const hungGrace = 2 * time.Second

// kubeletNode is a test agent programming a real VPP, with its device
// plugin registered with a stand-in for kubelet's registration, which
// keeps a gRPC client of the plugin and reads its ListAndWatch stream.
type kubeletNode struct {
	*vppAgent
	kubelet fakekubelet.Registration
}

// startKubeletNode starts the agent on v with the device plugin serving
// kubelet's API, its devices' health following the vswitch plugin.
func startKubeletNode(t testing.TB, v *vpp.VPP, vswitchConf string) *kubeletNode {
	t.Helper()
	dir := vppAgentDir(t)
	a := &vppAgent{vpp: v, log: &syncbuffer.Buffer{}, health: health.NewPlugin()}
	a.testAgent = startAgentWith(t, agentSetup{
		dir:         dir,
		wiringConf:  "mtu: 9000\n",
		vswitchConf: fmt.Sprintf("vpp-api-socket: %s\n%s", v.APISocket, vswitchConf),
		vswitchLog:  a.log,
		health:      a.health,
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vswitch plugin log:\n%s", a.log)
		}
	})
	devices := devicehealth.New(a.vswitchPlugin, hungGrace, testLogger{t})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		devices.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	pluginDir := filepath.Join(dir, "device-plugins")
	if err := os.MkdirAll(pluginDir, 0o700); err != nil {
		t.Fatal(err)
	}
	registry, err := fakekubelet.Start(pluginDir, "kubelet.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(registry.Stop)
	server, err := deviceplugin.New(deviceplugin.Config{
		ResourceName: dmapi.DefaultResourceName, PluginDir: pluginDir, PluginSocket: "memif.sock", KubeletSocket: "kubelet.sock",
		Devices: allocation.DeviceIDs(8), Health: devices,
	}, a.controller, testLogger{t}, deviceplugin.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	n := &kubeletNode{vppAgent: a}
	select {
	case n.kubelet = <-registry.Registrations():
	case <-time.After(vppWaitLimit):
		t.Fatal("the device plugin did not register")
	}
	return n
}

// allocateOverGRPC calls the device plugin's Allocate as kubelet does, and
// returns the container's response; it fails t if no answer comes within
// admissionLimit.
func (n *kubeletNode) allocateOverGRPC(t testing.TB, deviceID string) *pluginapi.ContainerAllocateResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), admissionLimit)
	defer cancel()
	response, err := n.kubelet.Client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{deviceID}}},
	})
	if err != nil {
		t.Fatalf("Allocate %s: %v", deviceID, err)
	}
	return response.ContainerResponses[0]
}

// addPod announces a pod whose one container got response, as the pod
// manager does once the runtime shows it.
func (n *kubeletNode) addPod(t testing.TB, name string, response *pluginapi.ContainerAllocateResponse) {
	t.Helper()
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: name}, UID: "uid-" + name}
	n.push(t, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", Annotations: response.Annotations}}})
}

// traceVPPAPI starts VPP's trace of the API messages it receives, from
// empty.
func traceVPPAPI(t *testing.T, v *vpp.VPP) {
	t.Helper()
	for _, command := range []string{"api trace off", "api trace free", "api trace on"} {
		v.CLI(t, command)
	}
}

var tracedMessage = regexp.MustCompile(`(?m)^vl_api_(\w+)_t:`)

// tracedVPPMessages counts the API messages VPP received since
// traceVPPAPI, by name.
func tracedVPPMessages(t *testing.T, v *vpp.VPP) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, m := range tracedMessage.FindAllStringSubmatch(v.CLI(t, "api", "trace", "dump"), -1) {
		counts[m[1]]++
	}
	return counts
}

// TestHungVPPHoldsNoAdmission: with VPP stopped (SIGSTOP), kubelet's
// Allocate answers, also the one queued behind another pod's wiring that
// waits on VPP; once VPP runs again both pods' memifs are created, each
// exactly once: whether the call to the stopped VPP waits for it, or the
// vswitch plugin drops the connection and VPP, when it runs again, does
// what it was sent before the resync on the new connection reads it back.
func TestHungVPPHoldsNoAdmission(t *testing.T) {
	tests := []struct {
		name        string
		vswitchConf string
		// whileStopped runs before VPP is resumed.
		whileStopped func(t *testing.T, n *kubeletNode)
	}{
		{name: "VPP call waits for VPP", vswitchConf: patientVswitchConf, whileStopped: func(*testing.T, *kubeletNode) {}},
		{name: "connection dropped", vswitchConf: hungVswitchConf, whileStopped: func(t *testing.T, n *kubeletNode) {
			// Both pods' commits fail once the unanswered ping drops the
			// connection; the memif create sent before stays in VPP's
			// socket.
			n.barrier(t)
			if reachability, _ := n.vswitchPlugin.Reachability(); reachability.Reachable {
				t.Fatalf("VPP reachable while stopped: %+v", reachability)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := vpp.Start(t)
			n := startKubeletNode(t, v, tc.vswitchConf)
			traceVPPAPI(t, v)

			v.Pause(t)
			first := n.allocateOverGRPC(t, "memif-000")
			n.addPod(t, "first", first)
			// The first pod's memif waits on the stopped VPP; kubelet's
			// next Allocate queues behind it.
			second := n.allocateOverGRPC(t, "memif-001")
			n.addPod(t, "second", second)
			for name, response := range map[string]*pluginapi.ContainerAllocateResponse{"first": first, "second": second} {
				if response.Envs[dmapi.EnvMemifSocket] == "" || response.Envs[dmapi.EnvMemifSecret] == "" || len(response.Mounts) != 1 {
					t.Errorf("pod %s's Allocate answered %v, %d mounts; want its socket, secret and directory", name, response.Envs, len(response.Mounts))
				}
			}

			tc.whileStopped(t, n)
			v.Resume(t)
			want := []string{"memif_default_first_app_0", "memif_default_second_app_0"}
			waitVPPMemifs(t, v, want)
			// A resync that finds VPP as it should be creates nothing.
			resync := eventloop.NewResyncEvent(eventloop.RequestedResyncName)
			n.push(t, resync)
			if err := resync.Wait(t.Context()); err != nil {
				t.Fatalf("resync after VPP came back: %v", err)
			}
			messages := tracedVPPMessages(t, v)
			if got := messages["memif_create_v2"]; got != len(want) {
				t.Errorf("VPP received %d memif_create_v2, want %d, one per memif; all it received: %v", got, len(want), messages)
			}
			if got := messages["memif_delete"]; got != 0 {
				t.Errorf("VPP received %d memif_delete, want none; all it received: %v", got, messages)
			}
			waitVPPMemifs(t, v, want)
		})
	}
}

// TestHungVPPMakesDevicesUnhealthy: kubelet's ListAndWatch stream gets
// every device Unhealthy once VPP has been stopped for longer than the
// grace, and Healthy again once it runs.
func TestHungVPPMakesDevicesUnhealthy(t *testing.T) {
	v := vpp.Start(t)
	n := startKubeletNode(t, v, hungVswitchConf)
	steps := []struct {
		name       string
		act        func()
		wantHealth string
	}{
		{name: "VPP answers", act: func() {}, wantHealth: pluginapi.Healthy},
		{name: "VPP stopped longer than the grace", act: func() { v.Pause(t) }, wantHealth: pluginapi.Unhealthy},
		{name: "VPP runs again", act: func() { v.Resume(t) }, wantHealth: pluginapi.Healthy},
	}
	var devices []*pluginapi.Device
	for _, step := range steps {
		step.act()
		poll.Until(t, vppWaitLimit, fmt.Sprintf("%s: ListAndWatch sends every device %s", step.name, step.wantHealth), func() error {
			select {
			case devices = <-n.kubelet.Devices:
			default:
			}
			if len(devices) != 8 || slices.ContainsFunc(devices, func(d *pluginapi.Device) bool { return d.Health != step.wantHealth }) {
				return fmt.Errorf("last list %v", devices)
			}
			return nil
		})
	}
}
