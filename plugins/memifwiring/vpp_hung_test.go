package memifwiring_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/contivpp/memif-agent/internal/configfile"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/poll"
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
// keeps a gRPC client of the plugin and reads its ListAndWatch stream, and
// its DRA driver on, client-go's fake clientset standing in for the API
// server.
type kubeletNode struct {
	*vppAgent
	kubelet fakekubelet.Registration
	// dra is a client of the DRA driver's kubelet-facing socket.
	dra       drapb.DRAPluginClient
	apiServer *fakeapiserver.Clientset
}

// draNodeName is the node of the DRA driver's pool.
const draNodeName = "node-1"

// prepareClaim stores a claim for device, allocated from the node's pool
// and reserved for pod, and calls NodePrepareResources for it as kubelet
// does; it fails t if no answer comes within admissionLimit.
func prepareClaim(t testing.TB, kubelet drapb.DRAPluginClient, apiServer *fakeapiserver.Clientset, pod, device string) {
	t.Helper()
	uid := "claim-uid-" + pod
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claim-" + pod, UID: types.UID(uid)}}
	claim.Status.Allocation = &resourceapi.AllocationResult{}
	claim.Status.Allocation.Devices.Results = []resourceapi.DeviceRequestAllocationResult{{
		Request: "memif", Driver: claims.DefaultDriverName, Pool: draNodeName, Device: device,
	}}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: types.UID("uid-" + pod)}}
	if _, err := apiServer.ResourceV1().ResourceClaims("default").Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), admissionLimit)
	defer cancel()
	response, err := kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: "default", Uid: uid, Name: claim.Name}}})
	if err != nil {
		t.Fatalf("NodePrepareResources of %s: %v", claim.Name, err)
	}
	if prepared := response.Claims[uid]; prepared.GetError() != "" || len(prepared.GetDevices()) != 1 {
		t.Fatalf("NodePrepareResources of %s = %v, want its device", claim.Name, prepared)
	}
}

// startKubeletNode starts the agent on v with the device plugin serving
// kubelet's API, its devices' health following the vswitch plugin, and
// the DRA driver serving 2 devices.
func startKubeletNode(t testing.TB, v *vpp.VPP, vswitchConf string) *kubeletNode {
	t.Helper()
	dir := vppAgentDir(t)
	devices := deviceManagerConfig(dir)
	devices.DeviceCount, devices.ClaimDeviceCount, devices.VswitchHealthGrace = 8, 2, configfile.Duration(hungGrace)
	if err := os.MkdirAll(devices.PluginDir, 0o700); err != nil {
		t.Fatal(err)
	}
	registry, err := fakekubelet.Start(devices.PluginDir, devices.KubeletSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(registry.Stop)
	driver := dradriver.DefaultConfig()
	driver.Enabled, driver.NodeName = true, draNodeName
	driver.PluginDataDir, driver.RegistrarDir, driver.CDIDir = filepath.Join(dir, "dra"), filepath.Join(dir, "reg"), filepath.Join(dir, "cdi")
	n := &kubeletNode{apiServer: fakeapiserver.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: draNodeName, UID: "node-uid"}})}
	n.vppAgent = startOnVPP(t, v, vswitchConf, agentSetup{
		dir: dir, wiringConf: "mtu: 9000\n", deviceManager: &devices, dra: &driver, draClient: n.apiServer,
	})
	select {
	case n.kubelet = <-registry.Registrations():
	case <-time.After(vppWaitLimit):
		t.Fatal("the device plugin did not register")
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(driver.PluginDataDir, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	n.dra = drapb.NewDRAPluginClient(conn)
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
	n.Push(t, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", Annotations: response.Annotations}}})
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
// waits on VPP, and so does the DRA driver's NodePrepareResources; once
// VPP runs again the three pods' memifs are created, each exactly once: whether the call to the stopped VPP waits for it, or the
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
			n.Barrier(t)
			if reachability, _ := n.VSwitch.Reachability(); reachability.Reachable {
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
			// next Allocate, and a claim's NodePrepareResources, queue
			// behind it.
			second := n.allocateOverGRPC(t, "memif-001")
			n.addPod(t, "second", second)
			prepareClaim(t, n.dra, n.apiServer, "claimer", "memif-dra-000")
			for name, response := range map[string]*pluginapi.ContainerAllocateResponse{"first": first, "second": second} {
				if response.Envs[dmapi.EnvMemifSocket] == "" || response.Envs[dmapi.EnvMemifSecret] == "" || len(response.Mounts) != 1 {
					t.Errorf("pod %s's Allocate answered %v, %d mounts; want its socket, secret and directory", name, response.Envs, len(response.Mounts))
				}
			}

			tc.whileStopped(t, n)
			v.Resume(t)
			want := []string{"memif_default_first_app_0", "memif_default_second_app_0", "memif_default_claimer_"}
			waitVPPMemifsNamed(t, v, want)
			// A resync that finds VPP as it should be creates nothing.
			n.Resync(t)
			messages := tracedVPPMessages(t, v)
			if got := messages["memif_create_v2"]; got != len(want) {
				t.Errorf("VPP received %d memif_create_v2, want %d, one per memif; all it received: %v", got, len(want), messages)
			}
			if got := messages["memif_delete"]; got != 0 {
				t.Errorf("VPP received %d memif_delete, want none; all it received: %v", got, messages)
			}
			waitVPPMemifsNamed(t, v, want)
		})
	}
}

// waitVPPMemifsNamed waits until VPP holds one tagged memif per name of
// want, and no other; a name ending in "_" is a prefix (a claim's memif
// is named after its allocation).
func waitVPPMemifsNamed(t testing.TB, v *vpp.VPP, want []string) {
	t.Helper()
	poll.Until(t, vppWaitLimit, fmt.Sprintf("VPP holds memifs %v", want), func() error {
		memifs, err := vppMemifs(t, v)
		if err != nil {
			return err
		}
		held := slices.Sorted(maps.Keys(memifs))
		for _, name := range want {
			matches := slices.IndexFunc(held, func(h string) bool {
				return h == name || strings.HasSuffix(name, "_") && strings.HasPrefix(h, name)
			})
			if matches < 0 || len(held) != len(want) {
				return fmt.Errorf("VPP holds %v", held)
			}
		}
		return nil
	})
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
