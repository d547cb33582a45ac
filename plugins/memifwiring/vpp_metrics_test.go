package memifwiring_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// memifSample is one memif metric's value, by its labels.
type memifSample struct {
	labels map[string]string
	value  float64
}

// gather returns the samples of metric name in registry.
func gather(t *testing.T, registry *prometheus.Registry, name string) []memifSample {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var samples []memifSample
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			sample := memifSample{labels: map[string]string{}}
			for _, label := range m.GetLabel() {
				sample.labels[label.GetName()] = label.GetValue()
			}
			switch family.GetType() {
			case dto.MetricType_COUNTER:
				sample.value = m.GetCounter().GetValue()
			default:
				sample.value = m.GetGauge().GetValue()
			}
			samples = append(samples, sample)
		}
	}
	return samples
}

// sampleOf returns the sample of interface iface.
func sampleOf(samples []memifSample, iface string) (memifSample, error) {
	for _, sample := range samples {
		if sample.labels["interface"] == iface {
			return sample, nil
		}
	}
	return memifSample{}, fmt.Errorf("no sample for %s in %v", iface, samples)
}

// TestMemifMetricsThroughVPP: pods' memifs wired in VPP by the real
// vswitch plugin, one pod side sending (testpmd txonly) and one receiving
// through the l2 network lab, one pod side never connected; the link
// collector labels each memif with its pod, container and network, shows
// the links up and down, and VPP's counters of what passed.
func TestMemifMetricsThroughVPP(t *testing.T) {
	v := vpp.Start(t)
	a := startVPPAgentWith(t, v, vppAgentDir(t), nil, "", redNetworks)
	sender, _ := a.addAnnotatedPod(t, "sender", "memif-000", `[{"network": "lab"}]`)
	receiver, _ := a.addAnnotatedPod(t, "receiver", "memif-001", `[{"network": "lab"}]`)
	a.addAnnotatedPod(t, "idle", "memif-002", `[{"network": "red"}]`)
	waitVPPMemifs(t, v, []string{"memif_default_idle_app_0", "memif_default_receiver_app_0", "memif_default_sender_app_0"})
	// The agent's own registry, which its metrics listener serves.
	registry := a.Metrics

	rx := startPodSide(t, receiver.Annotations[dmapi.AnnotationSocketHost], receiver.Envs[dmapi.EnvMemifSecret], "rxonly")
	tx := startPodSide(t, sender.Annotations[dmapi.AnnotationSocketHost], sender.Envs[dmapi.EnvMemifSecret], "txonly")
	if err := waitLinkUp(t, rx); err != nil {
		t.Fatal(err)
	}
	if err := waitLinkUp(t, tx); err != nil {
		t.Fatal(err)
	}
	// One scrape shows both links up and VPP's counters of what passed:
	// a pod side may come and go under load, and the counters move with
	// traffic.
	var links []memifSample
	poll.Until(t, vppWaitLimit, "both links up and VPP's counters of the packets from the sender to the receiver", func() error {
		links = gather(t, registry, "memif_interface_link_up")
		for _, pod := range []string{"sender", "receiver"} {
			if sample, err := sampleOf(links, "memif_default_"+pod+"_app_0"); err != nil || sample.value != 1 {
				return fmt.Errorf("the %s's link: %+v, %v", pod, sample, err)
			}
		}
		for _, want := range []struct{ metric, iface string }{
			{"memif_interface_rx_packets_total", "memif_default_sender_app_0"},
			{"memif_interface_rx_bytes_total", "memif_default_sender_app_0"},
			{"memif_interface_tx_packets_total", "memif_default_receiver_app_0"},
			{"memif_interface_tx_bytes_total", "memif_default_receiver_app_0"},
		} {
			sample, err := sampleOf(gather(t, registry, want.metric), want.iface)
			if err != nil {
				return err
			}
			if sample.value == 0 {
				return fmt.Errorf("%s of %s is 0", want.metric, want.iface)
			}
		}
		return nil
	})

	for _, want := range []struct {
		pod, network string
		up           float64
	}{{"sender", "lab", 1}, {"receiver", "lab", 1}, {"idle", "red", 0}} {
		iface := "memif_default_" + want.pod + "_app_0"
		sample, err := sampleOf(links, iface)
		if err != nil {
			t.Error(err)
			continue
		}
		l := sample.labels
		if sample.value != want.up || l["namespace"] != "default" || l["pod"] != want.pod || l["container"] != "app" ||
			l["memif"] != "0" || l["network"] != want.network || !strings.HasPrefix(l["vpp_interface"], "memif") {
			t.Errorf("memif_interface_link_up of %s = %v %v; want %v for pod default/%s, container app, memif 0, network %s",
				iface, sample.value, l, want.up, want.pod, want.network)
		}
	}
	if _, err := sampleOf(gather(t, registry, "memif_interface_link_down_since_seconds"), "memif_default_idle_app_0"); err != nil {
		t.Errorf("the idle pod's link: %v", err)
	}
}
