package server_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	controller "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// waitLimit only bounds waits for what should happen; nothing asserts time.
const waitLimit = 20 * time.Second

type testLogger struct{ t *testing.T }

func (l testLogger) Debugf(f string, a ...interface{}) { l.t.Logf("DEBUG "+f, a...) }
func (l testLogger) Infof(f string, a ...interface{})  { l.t.Logf("INFO "+f, a...) }
func (l testLogger) Warnf(f string, a ...interface{})  { l.t.Logf("WARN "+f, a...) }
func (l testLogger) Errorf(f string, a ...interface{}) { l.t.Logf("ERROR "+f, a...) }

// vswitchStandInCommitter accepts every transaction; no vswitch runs here.
type vswitchStandInCommitter struct{}

func (vswitchStandInCommitter) Commit(context.Context, eventloop.CommitRequest) error { return nil }

// startDeviceManager runs the real device manager as the only handler of
// the real event loop.
func startDeviceManager(t *testing.T) (*manager.Manager, *eventloop.Loop) {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DeviceCount = 4
	cfg.PluginDir = filepath.Join(dir, "device-plugins")
	cfg.SocketRoot = filepath.Join(dir, "memif")
	cfg.CheckpointPath = filepath.Join(dir, "checkpoint.json")
	devices, err := manager.New(cfg, manager.Options{Log: testLogger{t}})
	if err != nil {
		t.Fatal(err)
	}
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{
		Handlers:  []controller.EventHandler{devices},
		Committer: vswitchStandInCommitter{},
	})
	if err != nil {
		t.Fatal(err)
	}
	loop.Start()
	t.Cleanup(func() { loop.Close() })
	return devices, loop
}

func runEvent(t *testing.T, loop *eventloop.Loop, event interface {
	controller.Event
	Wait(context.Context) error
}) {
	t.Helper()
	if err := loop.PushEvent(event); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := event.Wait(ctx); err != nil {
		t.Fatalf("%s: %v", event, err)
	}
}

func TestAPIOverTheRealDeviceManager(t *testing.T) {
	devices, loop := startDeviceManager(t)
	client := startAPI(t, devices, nil, server.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := client.WatchAllocations(ctx, &memifv1.WatchAllocationsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("wait for the watch to be registered: %v", err)
	}

	allocation := dmapi.NewAllocateDevice(dmapi.DefaultResourceName, []string{"memif-000", "memif-001"})
	runEvent(t, loop, allocation)
	change, err := stream.Recv()
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	if change.Kind != memifv1.ChangeKind_CHANGE_KIND_ALLOCATED || change.Allocation.AllocationId != allocation.AllocationID ||
		change.Allocation.Secret != "" {
		t.Errorf("change = %v, want %s allocated, without its secret", change, allocation.AllocationID)
	}

	pod := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web"}
	if err := loop.PushEvent(&podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{
		{Name: "app", Annotations: allocation.Annotations},
	}}); err != nil {
		t.Fatal(err)
	}
	if change, err := stream.Recv(); err != nil || change.Kind != memifv1.ChangeKind_CHANGE_KIND_BOUND || change.Allocation.PodName != "web" {
		t.Errorf("change = %v (%v), want the allocation bound to default/web", change, err)
	}

	resp, err := client.GetPodMemifs(t.Context(), &memifv1.GetPodMemifsRequest{Namespace: "default", Name: "web", IncludeSecrets: true})
	if err != nil {
		t.Fatalf("GetPodMemifs: %v", err)
	}
	got := resp.Memifs
	if len(got) != 1 || got[0].ContainerName != "app" || len(got[0].DeviceIds) != 2 ||
		got[0].Secret != allocation.Envs[dmapi.EnvMemifSecret] || got[0].HostSocket != allocation.Annotations[dmapi.AnnotationSocketHost] {
		t.Errorf("got %d memifs of default/web, want the allocation of container app with its socket and secret", len(got))
	}
}
