package nodeapi

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ligato/vpp-agent/plugins/kvscheduler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/plugins/controller"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
)

// startController runs the real KV scheduler and the controller plugin,
// with the real device manager as its handler, as cn-infra would: every
// Init, then every AfterInit; Close in reverse order at cleanup.
func startController(t *testing.T) (*controller.Plugin, *manager.Manager) {
	t.Helper()
	devices := devicemanagertest.New(t, nil)
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) { deps.HTTPHandlers = nil }))
	loop := controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
		deps.KVScheduler = scheduler
		deps.EventHandlers = append(deps.EventHandlers, devices)
	}))
	for _, step := range []func() error{scheduler.Init, loop.Init, loop.AfterInit} {
		if err := step(); err != nil {
			t.Fatalf("start controller: %v", err)
		}
	}
	t.Cleanup(func() {
		for _, closer := range []func() error{loop.Close, scheduler.Close} {
			if err := closer(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return loop, devices
}

// startPlugin runs the node API plugin with conf as nodeapi.conf until t
// ends.
func startPlugin(t *testing.T, conf string, setDeps func(*Deps)) *Plugin {
	t.Helper()
	plugin := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = writeConfig(t, conf)
		setDeps(deps)
	}))
	if err := plugin.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if err := plugin.AfterInit(); err != nil {
		t.Fatalf("AfterInit: %v", err)
	}
	t.Cleanup(func() {
		if err := plugin.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return plugin
}

func dial(t *testing.T, socket string) memifv1.MemifAgentClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return memifv1.NewMemifAgentClient(conn)
}

func TestEventHistoryOfTheRealControllerOverTheAPI(t *testing.T) {
	loop, devices := startController(t)
	allocation := devicemanagertest.Allocate(t, loop, "memif-000")
	web := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web"}
	devicemanagertest.AddPod(t, loop, devices, web, devicemanagertest.Container{Name: "app", Allocation: allocation})
	devicemanagertest.WaitForHistory(t, loop, 3)
	socket := filepath.Join(t.TempDir(), "api.sock")
	startPlugin(t, "socket-path: "+socket+"\n", func(deps *Deps) {
		deps.DeviceManager = devices
		deps.Controller = loop
	})
	client := dial(t, socket)
	for _, tc := range []struct {
		name      string
		req       *memifv1.GetEventHistoryRequest
		wantNames []string
	}{
		{"all", &memifv1.GetEventHistoryRequest{}, []string{"1 StartupResync", "2 AllocateDevice", "3 AddPod"}},
		{"since the startup resync", &memifv1.GetEventHistoryRequest{SinceSeq: 1}, []string{"2 AllocateDevice", "3 AddPod"}},
		{"last one", &memifv1.GetEventHistoryRequest{Last: 1}, []string{"3 AddPod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.GetEventHistory(t.Context(), tc.req)
			if err != nil {
				t.Fatalf("GetEventHistory: %v", err)
			}
			var names []string
			for _, event := range resp.Events {
				names = append(names, fmt.Sprintf("%d %s", event.Seq, event.Name))
				if event.Error != "" || event.StartedAt == nil || len(event.Handlers) != 1 || event.Handlers[0].Handler != "devicemanager" {
					t.Errorf("event %d = %v, want a success of the device manager", event.Seq, event)
				}
			}
			if !slices.Equal(names, tc.wantNames) {
				t.Errorf("events = %v, want %v", names, tc.wantNames)
			}
		})
	}
}
