package inprocess_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/contivpp/memif-agent/internal/inprocess"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakepodtracker"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

const waitLimit = 30 * time.Second

// allocate calls Allocate of the agent's device plugin, as kubelet does,
// once the plugin serves.
func allocate(t *testing.T, socket string, deviceID string) *pluginapi.ContainerAllocateResponse {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var response *pluginapi.AllocateResponse
	poll.Until(t, waitLimit, "Allocate answered", func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		response, err = pluginapi.NewDevicePluginClient(conn).Allocate(ctx, &pluginapi.AllocateRequest{
			ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{deviceID}}},
		})
		return err
	})
	return response.ContainerResponses[0]
}

// TestRestartOnOneDirKeepsAllocations: the harness's agent serves kubelet
// on its own paths, and a second agent on the same directory is the first
// restarted, with its allocation, beside the same stand-ins.
func TestRestartOnOneDirKeepsAllocations(t *testing.T) {
	cases := []struct {
		name    string
		options func(dir string) inprocess.Options
	}{
		{"harness defaults", func(dir string) inprocess.Options { return inprocess.Options{Dir: dir} }},
		{"device manager config of the test", func(dir string) inprocess.Options {
			cfg := dmconfig.Default()
			cfg.DeviceCount = 4
			cfg.PluginDir = filepath.Join(dir, "plugins")
			cfg.SocketRoot = filepath.Join(dir, "sockets")
			cfg.CheckpointPath = filepath.Join(dir, "checkpoint.json")
			cfg.DeviceInfoDir = filepath.Join(dir, "devinfo")
			return inprocess.Options{Dir: dir, Configs: map[string]any{devicemanager.PluginName: cfg}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Short: unix socket paths must fit in 108 bytes.
			dir, err := os.MkdirTemp("", "ip")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			first := inprocess.Start(t, tc.options(dir))
			// kubelet says a pod holds the device: the allocation is kept.
			first.PodResources.Set(&podresourcesv1.PodResources{
				Name: "web", Namespace: "default",
				Containers: []*podresourcesv1.ContainerResources{{Name: "app", Devices: []*podresourcesv1.ContainerDevices{
					{ResourceName: dmapi.DefaultResourceName, DeviceIds: []string{"memif-001"}},
				}}},
			})
			socket := filepath.Join(deviceManagerConfig(t, first).PluginDir, dmconfig.DefaultPluginSocket)
			response := allocate(t, socket, "memif-001")
			if response.Envs["MEMIF_SOCKET"] == "" {
				t.Fatalf("Allocate answered %v, no MEMIF_SOCKET", response)
			}
			first.Stop()
			second := inprocess.Start(t, tc.options(dir))
			held := second.DeviceManager.ListAllocations()
			if len(held) != 1 || held[0].DeviceIDs[0] != "memif-001" {
				t.Errorf("restarted agent holds %+v, want the allocation of memif-001", held)
			}
		})
	}
}

func deviceManagerConfig(t *testing.T, a *inprocess.Agent) dmconfig.Config {
	t.Helper()
	content, err := os.ReadFile(filepath.Join(a.ConfigDir, devicemanager.PluginName+".conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := dmconfig.Parse(content)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// createdInterfaces is a KV descriptor standing in for VPP's interfaces:
// it keeps the name of each interface it is told to create.
type createdInterfaces struct {
	mu    sync.Mutex
	names []string
}

func (c *createdInterfaces) descriptor() *kvs.KVDescriptor {
	return fakevswitch.InterfaceDescriptor(kvs.KVDescriptor{
		Name: "test-vpp-interface",
		Create: func(key string, _ proto.Message) (kvs.Metadata, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.names = append(c.names, vpp_interfaces.ModelInterface.StripKeyPrefix(key))
			return nil, nil
		},
		Delete: func(string, proto.Message, kvs.Metadata) error { return nil },
	})
}

func (c *createdInterfaces) created() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.names)
}

// TestVswitchStandInGetsThePodsMemifs: an agent restarted with a pod that
// kubelet says holds its device binds the allocation to the pod, and the
// memif wiring's interface reaches the stand-in for VPP.
func TestVswitchStandInGetsThePodsMemifs(t *testing.T) {
	dir, err := os.MkdirTemp("", "ip")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	first := inprocess.Start(t, inprocess.Options{Dir: dir})
	allocate(t, filepath.Join(deviceManagerConfig(t, first).PluginDir, dmconfig.DefaultPluginSocket), "memif-001")
	first.PodResources.Set(&podresourcesv1.PodResources{
		Name: "web", Namespace: "default",
		Containers: []*podresourcesv1.ContainerResources{{Name: "app", Devices: []*podresourcesv1.ContainerDevices{
			{ResourceName: dmapi.DefaultResourceName, DeviceIds: []string{"memif-001"}},
		}}},
	})
	first.Stop()
	vswitch := &createdInterfaces{}
	inprocess.Start(t, inprocess.Options{Dir: dir, VswitchStandIn: []*kvs.KVDescriptor{vswitch.descriptor()}})
	poll.Until(t, waitLimit, "the pod's memif created in the stand-in", func() error {
		if created := vswitch.created(); !slices.Contains(created, "memif_default_web_app_0") {
			return fmt.Errorf("created %v", created)
		}
		return nil
	})
}

// TestKubeletInterceptorWrapsDevicePluginCalls: the interceptor of
// Options (agentwiring.WithKubeletInterceptor) sees kubelet's calls to the
// device plugin, and the call is answered through it.
func TestKubeletInterceptorWrapsDevicePluginCalls(t *testing.T) {
	var (
		mu     sync.Mutex
		called []string
	)
	interceptor := func(ctx context.Context, request any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		called = append(called, info.FullMethod)
		mu.Unlock()
		return handler(ctx, request)
	}
	a := inprocess.Start(t, inprocess.Options{KubeletInterceptor: interceptor})
	response := allocate(t, filepath.Join(deviceManagerConfig(t, a).PluginDir, dmconfig.DefaultPluginSocket), "memif-001")
	if response.Envs["MEMIF_SOCKET"] == "" {
		t.Fatalf("Allocate answered %v through the interceptor, no MEMIF_SOCKET", response)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(called, "/v1beta1.DevicePlugin/Allocate") {
		t.Errorf("the interceptor saw %v, want kubelet's Allocate", called)
	}
}

// seenEvents is a first handler that records the name of every event the
// loop offers it.
type seenEvents struct {
	mu    sync.Mutex
	names []string
}

func (s *seenEvents) String() string { return "seen-events" }
func (s *seenEvents) HandlesEvent(event controllerapi.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = append(s.names, event.Spec().Name)
	return false
}
func (s *seenEvents) Resync(controllerapi.Event, controllerapi.EventOperations) error { return nil }
func (s *seenEvents) Update(controllerapi.Event, controllerapi.EventOperations) (string, error) {
	return "", nil
}
func (s *seenEvents) Revert(controllerapi.Event) error { return nil }

func (s *seenEvents) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.names)
}

// TestPodSourcesStandInForThePodManager: with Options.PodSources the pod
// manager does not run, the plugins start in the agent's order without it
// (the memif wiring reads the device manager in its Init), the device
// manager's pod source is given the loop and its decision reaches the
// handlers, and Options.FirstHandler is offered every event.
func TestPodSourcesStandInForThePodManager(t *testing.T) {
	pods := fakepodtracker.New(false)
	first := &seenEvents{}
	a := inprocess.Start(t, inprocess.Options{PodSources: &inprocess.PodSources{LivePods: pods}, FirstHandler: first})
	if a.PodManager != nil || a.PodResources != nil {
		t.Errorf("the pod manager (%v) or the fake pod-resources API (%v) is there, want neither", a.PodManager, a.PodResources)
	}
	a.Barrier(t)
	if seen := first.seen(); !slices.Contains(seen, (&podapi.LivePods{}).Spec().Name) {
		t.Errorf("the first handler was offered %v, want the pod source's LivePods among them", seen)
	}
}
