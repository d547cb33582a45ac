package podevents_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/podevents"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// fakeDRADriver lends a client as the DRA driver does when it is on.
type fakeDRADriver struct{ client kubernetes.Interface }

func (f fakeDRADriver) KubeClient() kubernetes.Interface { return f.client }

var web = podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web"}

func start(t *testing.T, driver podevents.KubeClientSource) *podevents.Plugin {
	t.Helper()
	plugin := podevents.NewPlugin(podevents.UseDeps(func(deps *podevents.Deps) { deps.DRADriver = driver }))
	if err := plugin.Init(); err != nil {
		t.Fatal(err)
	}
	if err := plugin.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plugin.Close() })
	return plugin
}

func TestEventsThroughTheDRADriversClient(t *testing.T) {
	apiServer := fakeapiserver.NewClientset() // client-go's fake: no API server runs here
	plugin := start(t, fakeDRADriver{apiServer})
	plugin.MemifWired(web, "app", "memif_default_web_app_0", dmapi.MemifNetwork{Network: "lab", Mode: "ethernet"})
	poll.Until(t, 20*time.Second, "the MemifWired event", func() error {
		list, err := apiServer.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.Items[0].Reason != "MemifWired" {
			return fmt.Errorf("events %v, %v", list, err)
		}
		return nil
	})
}

// TestNoClientNoEvents: with the DRA driver off and no service account
// (not in a cluster), the plugin starts and drops what it is told.
func TestNoClientNoEvents(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, driver := range []podevents.KubeClientSource{nil, fakeDRADriver{}} {
		plugin := start(t, driver)
		plugin.MemifRefused(web, "app", dmapi.MemifNetwork{Reason: "unknown-network", Refused: "no network"})
		if err := plugin.Close(); err != nil {
			t.Error(err)
		}
		plugin.MemifWired(web, "app", "memif_default_web_app_0", dmapi.MemifNetwork{Mode: "ethernet"})
	}
}

// allocationList is the device manager's list of allocations, as
// ListAllocations returns it.
type allocationList []dmapi.MemifInfo

func (l allocationList) ListAllocations() []dmapi.MemifInfo { return l }

// TestLinkEventsOnTheMemifsPod: a link event of the vswitch is posted on
// the pod holding the memif; one of a memif no pod holds is dropped.
func TestLinkEventsOnTheMemifsPod(t *testing.T) {
	apiServer := fakeapiserver.NewClientset() // client-go's fake: no API server runs here
	allocations := allocationList{{AllocationID: "a1", DeviceIDs: []string{"memif-001", "memif-002"}, Pod: web.ID, PodUID: web.UID, ContainerName: "app",
		Networks: []dmapi.MemifNetwork{{MemifID: 0, Network: "lab"}, {MemifID: 1, Network: "red"}}}}
	plugin := podevents.NewPlugin(podevents.UseDeps(func(deps *podevents.Deps) {
		deps.DRADriver = fakeDRADriver{apiServer}
		deps.Allocations = allocations
	}))
	if err := plugin.Init(); err != nil {
		t.Fatal(err)
	}
	if err := plugin.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plugin.Close() })
	plugin.WrongSecret(vswitchapi.MemifLink{Name: "memif_default_gone_app_0", VPPName: "memif1/5", DownReason: vswitchapi.WrongSecret})
	plugin.WrongSecret(vswitchapi.MemifLink{Name: "memif_default_web_app_1", VPPName: "memif1/1", DownReason: vswitchapi.WrongSecret})
	plugin.LinkDown(vswitchapi.MemifLink{Name: "memif_default_web_app_0", VPPName: "memif1/0", DownReason: "disconnected"}, 30*time.Second)
	poll.Until(t, 20*time.Second, "the wrong secret and link down events on default/web", func() error {
		list, err := apiServer.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		reasons := map[string]string{}
		for _, event := range list.Items {
			if event.InvolvedObject.Name != "web" || event.InvolvedObject.UID != "uid-web" {
				return fmt.Errorf("event %s on %+v", event.Reason, event.InvolvedObject)
			}
			reasons[event.Reason] = event.Message
		}
		if len(list.Items) != 2 || !strings.Contains(reasons["MemifWrongSecret"], "memif 1 of container app (vswitch interface memif_default_web_app_1") ||
			!strings.Contains(reasons["MemifLinkDown"], "memif 0 of container app (vswitch interface memif_default_web_app_0") {
			return fmt.Errorf("events %v", reasons)
		}
		return nil
	})
}
