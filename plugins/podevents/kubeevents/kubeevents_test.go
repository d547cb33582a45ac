package kubeevents_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/podevents/kubeevents"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

const waitLimit = 20 * time.Second

var web = podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web"}

// events returns the events the API server (client-go's fake clientset:
// none runs here) holds once it holds want of them.
func events(t *testing.T, apiServer *fakeapiserver.Clientset, want int) []corev1.Event {
	t.Helper()
	var list *corev1.EventList
	poll.Until(t, waitLimit, fmt.Sprintf("%d events", want), func() error {
		var err error
		list, err = apiServer.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != want {
			return fmt.Errorf("%d events", len(list.Items))
		}
		return nil
	})
	return list.Items
}

func TestEventsOnThePod(t *testing.T) {
	cases := []struct {
		name          string
		record        func(*kubeevents.Recorder)
		wantType      string
		wantReason    string
		wantInMessage []string
	}{
		{"network refused", func(r *kubeevents.Recorder) {
			r.MemifRefused(web, "app", dmapi.MemifNetwork{MemifID: 1, Reason: "unknown-network",
				Refused: `memif spec field "network": no network "blue" on this node; the networks are red, lab (unknown-network)`})
		}, corev1.EventTypeWarning, kubeevents.ReasonMemifNetworkRefused, []string{"memif 1 of container app is not wired", `no network "blue"`, "unknown-network"}},
		{"spec refused", func(r *kubeevents.Recorder) {
			r.MemifRefused(web, "app", dmapi.MemifNetwork{Reason: "too-many-queues",
				Refused: `memif spec field "queues": at most 255 queue pairs, got 256 (too-many-queues)`})
		}, corev1.EventTypeWarning, kubeevents.ReasonMemifRefused, []string{"memif 0 of container app is not wired", "at most 255 queue pairs"}},
		{"wrong secret", func(r *kubeevents.Recorder) {
			r.WrongSecret(web, kubeevents.Link{Container: "app", MemifID: 0, Interface: "memif_default_web_app_0", VPPName: "memif1/0", DownReason: "incorrect secret"})
		}, corev1.EventTypeWarning, kubeevents.ReasonMemifWrongSecret,
			[]string{"memif 0 of container app (vswitch interface memif_default_web_app_0, VPP memif1/0): VPP refused the pod side: incorrect secret", "MEMIF_SECRET"}},
		{"link down, refused", func(r *kubeevents.Recorder) {
			r.LinkDown(web, kubeevents.Link{Container: "app", MemifID: 1, Interface: "memif_default_web_app_1", VPPName: "memif1/1", DownReason: "incorrect secret"}, 30*time.Second)
		}, corev1.EventTypeWarning, kubeevents.ReasonMemifLinkDown,
			[]string{"memif 1 of container app (vswitch interface memif_default_web_app_1, VPP memif1/1): link down for more than 30s: incorrect secret"}},
		{"link down, the pod side said why", func(r *kubeevents.Recorder) {
			r.LinkDown(web, kubeevents.Link{Container: "app", Interface: "memif_default_web_app_0", VPPName: "memif1/0", DownReason: "the pod side said: bye"}, time.Minute)
		}, corev1.EventTypeWarning, kubeevents.ReasonMemifLinkDown, []string{"link down for more than 1m0s: the pod side said: bye"}},
		{"wired in an l3 network", func(r *kubeevents.Recorder) {
			r.MemifWired(web, "app", "memif_default_web_app_0", dmapi.MemifNetwork{Network: "red", Mode: "ip",
				IPs: []string{"10.70.0.2/24"}, Gateway: []string{"10.70.0.1"}, Queues: 2})
		}, corev1.EventTypeNormal, kubeevents.ReasonMemifWired,
			[]string{"memif 0 of container app is wired as vswitch interface memif_default_web_app_0, in network red, ip mode, address 10.70.0.2/24, gateway 10.70.0.1"}},
		{"wired, a claim's memif of no known container, in no network", func(r *kubeevents.Recorder) {
			r.MemifWired(web, "", "memif_default_web_memif-dra-000-1a2b3c4d_0", dmapi.MemifNetwork{Mode: "ethernet"})
		}, corev1.EventTypeNormal, kubeevents.ReasonMemifWired,
			[]string{"memif 0 is wired as vswitch interface memif_default_web_memif-dra-000-1a2b3c4d_0, ethernet mode"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apiServer := fakeapiserver.NewClientset()
			recorder := kubeevents.New(apiServer, "node-1")
			t.Cleanup(recorder.Stop)
			tc.record(recorder)
			event := events(t, apiServer, 1)[0]
			involved := event.InvolvedObject
			if event.Type != tc.wantType || event.Reason != tc.wantReason || involved.Kind != "Pod" ||
				involved.Namespace != "default" || involved.Name != "web" || involved.UID != "uid-web" ||
				event.Source.Component != kubeevents.Component || event.Source.Host != "node-1" {
				t.Errorf("event = %s %s on %+v from %+v; want %s %s on pod default/web (uid-web) from %s on node-1",
					event.Type, event.Reason, involved, event.Source, tc.wantType, tc.wantReason, kubeevents.Component)
			}
			for _, want := range tc.wantInMessage {
				if !strings.Contains(event.Message, want) {
					t.Errorf("event message %q does not say %q", event.Message, want)
				}
			}
		})
	}
}

// TestRepeatsAreAggregated: the same refusal said again is one event with
// a count (the broadcaster's correlator), not a new event each time.
func TestRepeatsAreAggregated(t *testing.T) {
	apiServer := fakeapiserver.NewClientset()
	recorder := kubeevents.New(apiServer, "node-1")
	t.Cleanup(recorder.Stop)
	refusal := dmapi.MemifNetwork{Reason: "unknown-network", Refused: "no network"}
	for range 3 {
		recorder.MemifRefused(web, "app", refusal)
	}
	poll.Until(t, waitLimit, "one event counted 3 times", func() error {
		list, err := apiServer.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Count != 3 {
			return fmt.Errorf("events %v", list.Items)
		}
		return nil
	})
}
