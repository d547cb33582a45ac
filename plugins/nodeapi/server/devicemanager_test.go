package server_test

import (
	"context"
	"testing"
	"time"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
)

// waitLimit only bounds waits for what should happen; nothing asserts time.
const waitLimit = 20 * time.Second

func runEvent(t *testing.T, loop *eventloop.Loop, event interface {
	controllerapi.Event
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
	// No KV scheduler: the device manager's events carry no vswitch values.
	devices, loop := devicemanagertest.Start(t, nil)
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
