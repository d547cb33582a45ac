package wiring_test

import (
	"slices"
	"testing"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
)

// recordingTxn is the event's transaction as one handler sees it: what it
// put and deleted.
type recordingTxn struct {
	changes map[string]proto.Message
}

func newRecordingTxn() *recordingTxn { return &recordingTxn{changes: map[string]proto.Message{}} }

func (r *recordingTxn) Put(key string, value proto.Message)    { r.changes[key] = value }
func (r *recordingTxn) Delete(key string)                      { r.changes[key] = nil }
func (r *recordingTxn) Get(key string) proto.Message           { return r.changes[key] }
func (r *recordingTxn) PushFollowUp(controllerapi.Event) error { return nil }

// summary lists "+name" for each put and "-name" for each delete, sorted.
func (r *recordingTxn) summary() []string {
	var out []string
	for key, value := range r.changes {
		sign := "+"
		if value == nil {
			sign = "-"
		}
		name := vpp_interfaces.ModelInterface.StripKeyPrefix(key)
		if vpp_l2.ModelXConnectPair.IsKeyValid(key) {
			name = "xconnect " + vpp_l2.ModelXConnectPair.StripKeyPrefix(key) + " -> " + value.(*vpp_l2.XConnectPair).GetTransmitInterface()
		}
		out = append(out, sign+name)
	}
	slices.Sort(out)
	return out
}

var (
	web      = podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-1"}
	webAgain = podapi.Pod{ID: web.ID, UID: "uid-2"}
)

// podMemif is an allocation of devices, bound to container of pod unless
// pod is nil.
type podMemif struct {
	pod       *podapi.Pod
	container string
	devices   []string
}

func boundMemif(pod podapi.Pod, container string, devices ...string) podMemif {
	return podMemif{pod: &pod, container: container, devices: devices}
}

// startDevices runs the real device manager on the real event loop with
// memifs allocated, and bound, through its events.
func startDevices(t *testing.T, memifs []podMemif) dmapi.DeviceManagerAPI {
	t.Helper()
	devices, loop := devicemanagertest.Start(t, nil)
	for _, memif := range memifs {
		allocation := devicemanagertest.Allocate(t, loop, memif.devices...)
		if memif.pod != nil {
			devicemanagertest.AddPod(t, loop, devices, *memif.pod,
				devicemanagertest.Container{Name: memif.container, Allocation: allocation})
		}
	}
	return devices
}

type fullResync struct{}

func (fullResync) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "FullResync", Method: controllerapi.FullResync}
}
func (fullResync) String() string { return "full resync" }

func TestHandlerUpdates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config wiring.Config
		memifs []podMemif
		// events run in order; want is the last event's transaction.
		events []controllerapi.Event
		want   []string
	}{
		{
			name:   "add pod with two devices on one socket",
			memifs: []podMemif{boundMemif(web, "app", "memif-001", "memif-002")},
			events: []controllerapi.Event{&podapi.AddPod{Pod: web}},
			want:   []string{"+memif_default_web_app_0", "+memif_default_web_app_1"},
		},
		{
			name:   "pod without memif has nothing to wire",
			events: []controllerapi.Event{&podapi.AddPod{Pod: web}},
		},
		{
			name:   "delete pod removes what add put",
			memifs: []podMemif{boundMemif(web, "app", "memif-001")},
			events: []controllerapi.Event{&podapi.AddPod{Pod: web}, &podapi.DeletePod{Pod: web}},
			want:   []string{"-memif_default_web_app_0"},
		},
		{
			name:   "late delete of a replaced pod keeps the new one",
			memifs: []podMemif{boundMemif(webAgain, "app", "memif-001")},
			events: []controllerapi.Event{&podapi.AddPod{Pod: webAgain}, &podapi.DeletePod{Pod: web}},
		},
		{
			name:   "memifs of another incarnation are not wired",
			memifs: []podMemif{boundMemif(web, "app", "memif-001")},
			events: []controllerapi.Event{&podapi.AddPod{Pod: webAgain}},
		},
		{
			name:   "resync puts every bound memif",
			memifs: []podMemif{boundMemif(web, "app", "memif-001"), {devices: []string{"memif-002"}}},
			events: []controllerapi.Event{fullResync{}},
			want:   []string{"+memif_default_web_app_0"},
		},
		{
			name:   "resync puts both directions of every pair, whether its pods are here or not",
			config: wiring.Config{L2XConnect: [][]string{{"default/web/app", "default/db/app/1"}}},
			memifs: []podMemif{boundMemif(web, "app", "memif-001")},
			events: []controllerapi.Event{fullResync{}},
			want: []string{"+memif_default_web_app_0", "+xconnect memif_default_db_app_1 -> memif_default_web_app_0",
				"+xconnect memif_default_web_app_0 -> memif_default_db_app_1"},
		},
		{
			name:   "delete pod leaves the pair's cross-connects to the KV scheduler",
			config: wiring.Config{L2XConnect: [][]string{{"default/web/app", "default/db/app"}}},
			memifs: []podMemif{boundMemif(web, "app", "memif-001")},
			events: []controllerapi.Event{fullResync{}, &podapi.DeletePod{Pod: web}},
			want:   []string{"-memif_default_web_app_0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handler, err := wiring.NewHandler(startDevices(t, tc.memifs), tc.config, wiring.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var txn *recordingTxn
			for _, event := range tc.events {
				txn = newRecordingTxn()
				if !handler.HandlesEvent(event) {
					t.Fatalf("handler does not handle %s", event)
				}
				var err error
				if event.Spec().Method.IsResync() {
					err = handler.Resync(event, txn)
				} else {
					_, err = handler.Update(event, txn)
				}
				if err != nil {
					t.Fatalf("%s: %v", event, err)
				}
			}
			if got := txn.summary(); !slices.Equal(got, tc.want) {
				t.Errorf("transaction = %v, want %v", got, tc.want)
			}
		})
	}
}
