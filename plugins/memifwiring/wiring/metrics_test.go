package wiring_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// TestAddressUseMetrics: each l3 network's pool shows how many of the
// addresses it can hand out on the node are handed out, as pods come and
// go; refused memifs count under their reason, and one refused for an
// exhausted subnet takes the address its pod's going frees.
func TestAddressUseMetrics(t *testing.T) {
	networks, err := netconf.Decode([]byte("networks:\n  - {name: red, type: l3, subnet: 10.70.0.0/24}\n" +
		"  - {name: tiny, type: l3, subnet: 10.99.0.0/30}\n  - {name: lab, type: l2}\ndefault-network: lab\n"))
	if err != nil {
		t.Fatal(err)
	}
	registry := prometheus.NewRegistry()
	devices := devicemanagertest.New(t, nil)
	handler, err := wiring.NewHandler(devices, wiring.Config{}, wiring.Options{
		Networks: fakeNetworksPlugin{networks}, Assigner: openAssigner(t, devices.NetworksStatePath()), Recorder: devices,
		Metrics: registry, Log: testlog.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, devices, handler)

	want := func(what string, inUse map[string]float64, refused map[string]float64) {
		t.Helper()
		poll.Until(t, 20*time.Second, what, func() error {
			for network, n := range inUse {
				if got, _ := sample(t, registry, "memif_network_addresses_in_use", "network", network); got != n {
					return fmt.Errorf("memif_network_addresses_in_use{network=%q} = %v, want %v", network, got, n)
				}
			}
			for reason, n := range refused {
				if got, _ := sample(t, registry, "memif_wiring_memifs_refused_total", "reason", reason); got != n {
					return fmt.Errorf("memif_wiring_memifs_refused_total{reason=%q} = %v, want %v", reason, got, n)
				}
			}
			return nil
		})
	}
	pod := func(name, annotation string) podapi.Pod {
		return podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: name}, UID: "uid-" + name, Networks: annotation}
	}
	web := pod("web", `[{"network": "red"}, {"network": "tiny", "memif-id": 1}]`)
	devicemanagertest.AddPod(t, loop, devices, web, devicemanagertest.Container{Name: "app",
		Allocation: devicemanagertest.Allocate(t, loop, "memif-001", "memif-002")})
	want("web's addresses", map[string]float64{"red": 1, "tiny": 1}, nil)
	if capacity, _ := sample(t, registry, "memif_network_addresses", "network", "red"); capacity != 253 {
		t.Errorf("memif_network_addresses{network=red} = %v, want 253 (a /24 without network, broadcast and gateway)", capacity)
	}
	if capacity, _ := sample(t, registry, "memif_network_addresses", "network", "tiny"); capacity != 1 {
		t.Errorf("memif_network_addresses{network=tiny} = %v, want 1", capacity)
	}

	db := pod("db", `[{"network": "tiny"}]`)
	devicemanagertest.AddPod(t, loop, devices, db, devicemanagertest.Container{Name: "app", Allocation: devicemanagertest.Allocate(t, loop, "memif-003")})
	want("db refused, tiny full", map[string]float64{"red": 1, "tiny": 1}, map[string]float64{"subnet-exhausted": 1})

	devicemanagertest.DeletePod(t, loop, devices, web)
	want("web's addresses returned, tiny's to db", map[string]float64{"red": 0, "tiny": 1}, nil)
	memifs, err := devices.BoundPodMemifs(db.ID)
	if err != nil || len(memifs) != 1 || len(memifs[0].Networks) != 1 || memifs[0].Networks[0].Refused != "" ||
		memifs[0].Networks[0].Network != "tiny" {
		t.Fatalf("db's memifs %+v, %v; want its memif wired in tiny", memifs, err)
	}
}

// sample returns the value of metric name whose label is value, and
// whether there is one.
func sample(t *testing.T, registry *prometheus.Registry, name, label, value string) (float64, bool) {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue() + m.GetCounter().GetValue(), true
				}
			}
		}
	}
	return 0, false
}
