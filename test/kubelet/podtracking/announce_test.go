package podtracking_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

// TestMultiMemifPodsAnnouncedOnce: kubelet's pod-resources lists a
// container's devices in whatever order it builds them in (v1.37 builds the
// list from a map, and often gives a new order from one call to the next). A
// pod holding two or three memifs is still announced once, and its memifs
// stay bound as they were, however often the tracker compares it with
// kubelet's listing and whatever orders kubelet gave: the test logs them but
// does not need them to vary. That the tracker is blind to the order is
// proved with orders made to vary on purpose, by
// TestMultiMemifPodAnnouncedOnceInAnyDeviceOrder (plugins/podmanager/
// podtracker) and TestListingsOfAPodAreEqualInAnyDeviceOrder
// (plugins/podmanager/podresources).
func TestMultiMemifPodsAnnouncedOnce(t *testing.T) {
	const reconciles = 40
	e := newEnv(t)
	a := e.startAgent(t)
	memifs := map[string]int{"two-memifs": 2, "three-memifs": 3}
	for name, count := range memifs {
		if err := e.kubelet.AllocatePod(e.ctx, kubelettest.NewPod(name, resource, int64(count))); err != nil {
			t.Fatalf("admit pod %s: %v", name, err)
		}
	}

	announced := func(name string) int {
		return a.pushed.Count(func(event controllerapi.Event) bool {
			add, ok := event.(*podapi.AddPod)
			return ok && add.Pod.ID == podID(name)
		})
	}
	// The tracker's own ticks may announce a pod while kubelet is still
	// admitting it, and again once it holds every device: a real change.
	// Once settled, an unchanged pod is never announced again.
	// Settled: a reconciliation changes no binding (evidence may complete
	// one after kubelet listed the pod, its UID learned later).
	bound := map[string][]dmapi.MemifInfo{}
	poll.Until(t, waitTimeout, "the pods' bindings unchanged by a reconciliation", func() error {
		reconcile(t, a)
		for name, count := range memifs {
			bound[name] = boundMemifs(t, a, name, count)
		}
		reconcile(t, a)
		for name := range memifs {
			if now, err := a.DeviceManager.BoundPodMemifs(podID(name)); err != nil || !reflect.DeepEqual(now, bound[name]) {
				return fmt.Errorf("pod %s: %s became %s (%v)", name, describeBinding(bound[name]), describeBinding(now), err)
			}
		}
		return nil
	})
	settled := map[string]int{}
	for name := range memifs {
		settled[name] = announced(name)
	}
	for range reconciles {
		reconcile(t, a)
	}
	orders := kubeletDeviceOrders(t, e, reconciles)
	for name, count := range memifs {
		t.Run(name, func(t *testing.T) {
			t.Logf("kubelet listed the devices of %s in %d orders in %d calls: %v", name, len(orders[name]), reconciles, orders[name])
			if settled[name] < 1 || announced(name) != settled[name] {
				t.Errorf("pod holding %d memifs announced %d times once settled, %d after %d more reconciliations; want it announced and then never again",
					count, settled[name], announced(name), reconciles)
			}
			if now, err := a.DeviceManager.BoundPodMemifs(podID(name)); err != nil || !reflect.DeepEqual(now, bound[name]) {
				t.Errorf("memifs bound to the pod after %d reconciliations: %s (%v); want them as they were once settled: %s", reconciles, describeBinding(now), err, describeBinding(bound[name]))
			}
		})
	}
}

// boundMemifs waits until the agent has bound an allocation of count
// devices to the pod, and returns the pod's memifs.
func boundMemifs(t *testing.T, a *agent, name string, count int) []dmapi.MemifInfo {
	t.Helper()
	var memifs []dmapi.MemifInfo
	poll.Until(t, waitTimeout, fmt.Sprintf("pod %s bound to %d memifs", name, count), func() (err error) {
		memifs, err = a.DeviceManager.BoundPodMemifs(podID(name))
		if err != nil {
			return err
		}
		if len(memifs) != 1 || len(memifs[0].DeviceIDs) != count {
			return fmt.Errorf("bound: %v", memifs)
		}
		return nil
	})
	return memifs
}

// describeBinding shows memifs with what binds them (the secret masked).
func describeBinding(memifs []dmapi.MemifInfo) string {
	var described []string
	for _, m := range memifs {
		described = append(described, fmt.Sprintf("%s uid=%q networks=%v", m, m.PodUID, m.Networks))
	}
	return fmt.Sprint(described)
}

// kubeletDeviceOrders asks kubelet's pod-resources List calls times and
// returns, by pod name, the distinct orders it listed the pod's memif
// device IDs in.
func kubeletDeviceOrders(t *testing.T, e *env, calls int) map[string][]string {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+e.podResourcesSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("pod-resources client: %v", err)
	}
	defer conn.Close()
	lister := podresourcesv1.NewPodResourcesListerClient(conn)
	orders := map[string][]string{}
	for range calls {
		ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
		// kubelet admits 100 calls a second, bursts of 10.
		time.Sleep(10 * time.Millisecond)
		response, err := lister.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
		cancel()
		if err != nil {
			t.Fatalf("kubelet's pod-resources List: %v", err)
		}
		for _, pod := range response.GetPodResources() {
			var ids []string
			for _, container := range pod.GetContainers() {
				for _, devices := range container.GetDevices() {
					ids = append(ids, devices.GetDeviceIds()...)
				}
			}
			if order := strings.Join(ids, ","); !slices.Contains(orders[pod.GetName()], order) {
				orders[pod.GetName()] = append(orders[pod.GetName()], order)
			}
		}
	}
	return orders
}

// TestAdmissionUnderAFloodOfBackgroundEvents admits pods through kubelet's
// device manager while the controller's queue is kept full of AddPods for
// 300 running pods of three memifs each, as re-announcements did: no
// admission is refused, and the flood is.
func TestAdmissionUnderAFloodOfBackgroundEvents(t *testing.T) {
	const (
		runningPods  = 300
		admissions   = 60
		memifsPerPod = 3
	)
	e := newEnv(t)
	e.devices = (runningPods + admissions) * memifsPerPod
	a := e.startAgent(t)
	for i := range runningPods {
		if err := e.kubelet.AllocatePod(e.ctx, kubelettest.NewPod(fmt.Sprintf("running-%03d", i), resource, memifsPerPod)); err != nil {
			t.Fatalf("admit running pod %d: %v", i, err)
		}
	}
	kubelet, err := podresources.New(e.podResourcesSocket, waitTimeout)
	if err != nil {
		t.Fatalf("pod-resources client: %v", err)
	}
	defer kubelet.Close()
	listing, err := kubelet.ListPods(e.ctx)
	if err != nil || len(listing) != runningPods {
		t.Fatalf("kubelet lists %d pods (%v), want %d", len(listing), err, runningPods)
	}

	stopFlood := floodAddPods(t, a, listing)
	poll.Until(t, waitTimeout, "the flood filling the controller's queue", func() error {
		if refusedByLane(t, a)["background"] == 0 {
			return errors.New("no background event refused yet")
		}
		return nil
	})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		rejected []error
		admitted []string
	)
	for i := range admissions {
		wg.Go(func() {
			pod := kubelettest.NewPod(fmt.Sprintf("admitted-%02d", i), resource, memifsPerPod)
			err := e.kubelet.AllocatePod(e.ctx, pod)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rejected = append(rejected, err)
				return
			}
			if devices := e.kubelet.Devices(pod.UID, "c0", resource); len(devices) != memifsPerPod {
				rejected = append(rejected, fmt.Errorf("pod %s admitted with devices %v, want %d", pod.Name, devices, memifsPerPod))
				return
			}
			admitted = append(admitted, pod.Name)
		})
	}
	wg.Wait()
	stopFlood()

	refused := refusedByLane(t, a)
	t.Logf("%d of %d pods admitted; events refused: %v admissions, %v background", len(admitted), admissions, refused["admission"], refused["background"])
	for _, err := range rejected {
		t.Errorf("admission failed under the flood: %v", err)
	}
	if refused["admission"] != 0 {
		t.Errorf("%v admission events refused, want 0", refused["admission"])
	}
	if refused["background"] == 0 {
		t.Errorf("no background event refused: the flood never filled the queue, and the test shows nothing")
	}
}

// floodAddPods announces every pod of listing again and again from four
// goroutines, pausing briefly at a full queue as the pod tracker does,
// until the returned stop is called.
func floodAddPods(t *testing.T, a *agent, listing []podapi.PodState) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				for _, state := range listing {
					event := &podapi.AddPod{Pod: state.Pod, Containers: state.Containers}
					err := a.Controller.PushEvent(event)
					if errors.Is(err, controllerapi.ErrEventQueueFull) {
						time.Sleep(100 * time.Microsecond)
					} else if err != nil {
						return
					}
				}
			}
		})
	}
	stop = func() {
		cancel()
		wg.Wait()
	}
	t.Cleanup(stop)
	return stop
}

// refusedByLane reads the loop's events_refused_total, summed by lane.
func refusedByLane(t *testing.T, a *agent) map[string]float64 {
	t.Helper()
	families, err := a.Metrics.Gather()
	if err != nil {
		t.Fatalf("gather the controller's metrics: %v", err)
	}
	byLane := map[string]float64{}
	for _, family := range families {
		if family.GetName() != "memif_agent_controller_events_refused_total" {
			continue
		}
		for _, metric := range family.GetMetric() {
			for _, label := range metric.GetLabel() {
				if label.GetName() == "lane" {
					byLane[label.GetValue()] += metric.GetCounter().GetValue()
				}
			}
		}
	}
	return byLane
}
