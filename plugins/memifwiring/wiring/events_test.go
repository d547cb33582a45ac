package wiring_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"

	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/assign"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/podevents/kubeevents"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// fakeNetworksPlugin hands out a fixed networks.conf, as the networks
// plugin hands out the file it read.
type fakeNetworksPlugin struct{ config netconf.Config }

func (f fakeNetworksPlugin) Networks() netconf.Config { return f.config }

// TestPodEvents: the wiring tells each pod, through client-go's event
// recorder, of each memif it wired (MemifWired: interface, network,
// address) and refused (MemifRefused: why), never with a secret; a
// resync, which wires again what is already wired, tells nothing again,
// nor does the resync of a restarted agent's wiring.
func TestPodEvents(t *testing.T) {
	networks, err := netconf.Decode([]byte("networks:\n  - {name: red, type: l3, subnet: 10.70.0.0/24}\n  - {name: lab, type: l2}\ndefault-network: lab\n"))
	if err != nil {
		t.Fatal(err)
	}
	apiServer := fakeapiserver.NewClientset() // no API server runs here
	recorder := kubeevents.New(apiServer, "node-1")
	t.Cleanup(recorder.Stop)
	devices := devicemanagertest.New(t, nil)
	handler, err := wiring.NewHandler(devices, wiring.Config{}, wiring.Options{
		Networks: fakeNetworksPlugin{networks}, Assigner: openAssigner(t, devices.NetworksStatePath()), Recorder: devices,
		Events: recorder, Log: testlog.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, devices, handler)

	app := devicemanagertest.Allocate(t, loop, "memif-001")
	sidecar := devicemanagertest.Allocate(t, loop, "memif-002", "memif-003")
	web := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web",
		Networks: `[{"network": "red", "container": "app"}, {"network": "blue", "container": "sidecar", "memif-id": 1}]`}
	devicemanagertest.AddPod(t, loop, devices, web,
		devicemanagertest.Container{Name: "app", Allocation: app}, devicemanagertest.Container{Name: "sidecar", Allocation: sidecar})

	want := []string{
		"Normal MemifWired memif 0 of container app is wired as vswitch interface memif_default_web_app_0, in network red, ip mode, address 10.70.0.2/24, gateway 10.70.0.1",
		"Normal MemifWired memif 0 of container sidecar is wired as vswitch interface memif_default_web_sidecar_0, in network lab, ethernet mode",
		`Warning MemifNetworkRefused memif 1 of container sidecar is not wired: memif spec field "network": no network "blue" on this node; the networks are red, lab (unknown-network)`,
	}
	events := waitForEvents(t, apiServer, len(want))
	if got := describe(events); !slices.Equal(got, want) {
		t.Errorf("events on the pod:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, event := range events {
		if event.InvolvedObject.Kind != "Pod" || event.InvolvedObject.Name != "web" || event.InvolvedObject.UID != "uid-web" {
			t.Errorf("event %s is on %+v, want pod default/web", event.Reason, event.InvolvedObject)
		}
		for _, secret := range []string{app.Envs[dmapi.EnvMemifSecret], sidecar.Envs[dmapi.EnvMemifSecret]} {
			if strings.Contains(fmt.Sprintf("%+v", event), secret) {
				t.Errorf("event %s carries a memif secret", event.Reason)
			}
		}
	}

	restarted, err := wiring.NewHandler(devices, wiring.Config{}, wiring.Options{
		Networks: fakeNetworksPlugin{networks}, Assigner: openAssigner(t, devices.NetworksStatePath()), Events: recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Resync(fullResync{}, newRecordingTxn()); err != nil {
		t.Fatal(err)
	}
	resync := eventloop.NewResyncEvent("TestResync")
	if err := loop.PushEvent(resync); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := resync.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// The recorder posts in order: once the next pod's event is there, a
	// resync's would be too.
	db := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "db"}, UID: "uid-db"}
	devicemanagertest.AddPod(t, loop, devices, db, devicemanagertest.Container{Name: "app", Allocation: devicemanagertest.Allocate(t, loop, "memif-004")})
	events = waitForEvents(t, apiServer, len(want)+1)
	for _, event := range events {
		if event.Count != 1 {
			t.Errorf("%s %s was told %d times", event.Reason, event.Message, event.Count)
		}
	}
	if got := describe(slices.DeleteFunc(events, func(e corev1.Event) bool { return e.InvolvedObject.Name != "db" })); len(got) != 1 ||
		!strings.Contains(got[0], "memif_default_db_app_0, in network lab") {
		t.Errorf("after the resync, the new events are %q, want db's memif wired alone", got)
	}
}

func openAssigner(t *testing.T, path string) *assign.Assigner {
	t.Helper()
	assigner, err := assign.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return assigner
}

// waitForEvents returns the events the API server holds once it holds n.
func waitForEvents(t *testing.T, apiServer *fakeapiserver.Clientset, n int) []corev1.Event {
	t.Helper()
	var events []corev1.Event
	poll.Until(t, 20*time.Second, fmt.Sprintf("%d events", n), func() error {
		list, err := apiServer.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != n {
			return fmt.Errorf("%d events: %v", len(list.Items), describe(list.Items))
		}
		events = list.Items
		return nil
	})
	return events
}

// describe words each event as "type reason message", sorted.
func describe(events []corev1.Event) []string {
	described := make([]string, len(events))
	for i, e := range events {
		described[i] = e.Type + " " + e.Reason + " " + e.Message
	}
	slices.Sort(described)
	return described
}
