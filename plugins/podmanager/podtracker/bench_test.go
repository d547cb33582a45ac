package podtracker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	docker "github.com/fsouza/go-dockerclient"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
	"github.com/contivpp/memif-agent/plugins/podmanager/podtracker"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/fakepodresources"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// benchPods pods, each a running sandbox and one created app container:
// 2*benchPods kubelet containers in Docker.
const benchPods = 100

// BenchmarkResync measures a full resync over 200 pod containers in a real
// dockerd: the raw Docker listing with the same label filter is the
// baseline; the inspector adds grouping into pods; Reconcile adds
// kubelet's pod-resources listing, comparing every pod with what was
// announced and pushing LivePods.
func BenchmarkResync(b *testing.B) {
	daemon := dockerd.Start(b)
	client := daemon.Client(b)
	image := dockerd.ImportSleeperImage(b, client)
	var admittedPods []*podresourcesv1.PodResources
	for i := range benchPods {
		name := fmt.Sprintf("pod-%03d", i)
		dockerd.CreatePod(b, client, dockerd.PodSpec{
			Namespace: "default", Name: name, UID: "uid-" + name, Image: image,
			Containers: []dockerd.ContainerSpec{{Name: "app", Mounts: []dockerd.Mount{{HostPath: b.TempDir(), ContainerPath: "/run/vpp"}}}},
		})
		admittedPods = append(admittedPods, admitted(name, "app", fmt.Sprintf("memif-%03d", i)))
	}
	tracker := benchTracker(b, client, admittedPods)
	ctx := context.Background()

	b.Run("docker-list-baseline", func(b *testing.B) {
		for b.Loop() {
			containers, err := client.ListContainers(docker.ListContainersOptions{
				All: true, Filters: map[string][]string{"label": {dockerpods.LabelPodUID}},
			})
			if err != nil || len(containers) != 2*benchPods {
				b.Fatalf("listed %d containers, %v", len(containers), err)
			}
		}
	})
	b.Run("inspector-list-pods", func(b *testing.B) {
		inspector := dockerpods.NewInspector(client, nil)
		for b.Loop() {
			if pods, err := inspector.ListPods(ctx); err != nil || len(pods) != benchPods {
				b.Fatalf("listed %d pods, %v", len(pods), err)
			}
		}
	})
	b.Run("tracker-reconcile", func(b *testing.B) {
		for b.Loop() {
			if err := tracker.Reconcile(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchTracker runs a tracker whose events go through a real event loop
// with no handler.
// kubelet lists admitted.
func benchTracker(b *testing.B, client *docker.Client, admitted []*podresourcesv1.PodResources) *podtracker.Tracker {
	socket := b.TempDir() + "/kubelet.sock"
	fakepodresources.Serve(b, socket).Set(admitted...)
	kubeletClient, err := podresources.New(socket, 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { kubeletClient.Close() })
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Handlers: []controllerapi.EventHandler{}, Committer: fakevswitch.Committer{}})
	if err != nil {
		b.Fatal(err)
	}
	loop.Start()
	b.Cleanup(func() { loop.Close() })
	tracker, err := podtracker.New(podtracker.Config{ReconcilePeriod: time.Hour},
		podtracker.Deps{Runtime: dockerpods.NewSource(client, nil, 0, 0), Kubelet: kubeletClient, EventLoop: loop, Log: testlog.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	tracker.Start()
	b.Cleanup(tracker.Close)
	// The first reconciliation announces every pod; the measured ones find
	// nothing to change, as in steady state.
	if err := tracker.Reconcile(context.Background()); err != nil {
		b.Fatal(err)
	}
	return tracker
}
