package memifwiring_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceinfo"
	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

const redNetworks = "networks:\n  - {name: red, type: l3, subnet: 10.70.0.0/24}\n  - {name: lab, type: l2}\ndefault-network: lab\n"

// addAnnotatedPod allocates one memif and binds it to pod name's app
// container; the pod carries networks as its memif.contivpp.io/networks
// annotation.
func (a *vppAgent) addAnnotatedPod(t *testing.T, name, device, networks string) (*dmapi.AllocateDevice, podapi.PodState) {
	t.Helper()
	allocation := a.allocate(t, device)
	state := podapi.PodState{
		Pod:        podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: name}, UID: "uid-" + name, Networks: networks},
		Containers: []podapi.PodContainer{container("app", allocation)},
	}
	a.Push(t, &podapi.AddPod{Pod: state.Pod, Containers: state.Containers})
	a.Barrier(t)
	return allocation, state
}

// readMemifJSON reads the memif.json the allocation's pod sees.
func readMemifJSON(t *testing.T, allocation *dmapi.AllocateDevice) memifjson.File {
	t.Helper()
	dir := filepath.Dir(allocation.Annotations[dmapi.AnnotationSocketHost])
	content, err := os.ReadFile(filepath.Join(dir, memifjson.FileName))
	if err != nil {
		t.Fatalf("memif.json: %v", err)
	}
	var file memifjson.File
	if err := json.Unmarshal(content, &file); err != nil {
		t.Fatalf("memif.json %s: %v", content, err)
	}
	return file
}

// wantDeviceInfoAsMemifJSON checks that the device-info file of the
// allocation's device (in the harness's device-info-dir under dir) tells
// what its memif.json tells: the socket path and the mode, the pod as
// the slave.
func wantDeviceInfoAsMemifJSON(t *testing.T, dir string, allocation *dmapi.AllocateDevice) {
	t.Helper()
	path := filepath.Join(dir, "devinfo", deviceinfo.FileName(allocation.ResourceName, allocation.DeviceIDs[0]))
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("device-info file: %v", err)
	}
	var info deviceinfo.DeviceInfo
	if err := json.Unmarshal(content, &info); err != nil || info.Memif == nil {
		t.Fatalf("device-info file %s: %v", content, err)
	}
	iface := readMemifJSON(t, allocation).Interfaces[0]
	if want := deviceinfo.NewMemif(iface.Socket, iface.Mode); info.Type != want.Type || info.Version != want.Version || *info.Memif != *want.Memif {
		t.Errorf("device-info %s, want %+v as memif.json's %+v", content, *want.Memif, iface)
	}
}

func wantInterface(t *testing.T, file memifjson.File, network, ip, gateway string, queues uint32) {
	t.Helper()
	if len(file.Interfaces) != 1 {
		t.Fatalf("memif.json lists %d interfaces, want 1: %+v", len(file.Interfaces), file)
	}
	iface := file.Interfaces[0]
	if iface.Network != network || iface.Mode != "ip" || len(iface.IPs) != 1 || iface.IPs[0].String() != ip ||
		len(iface.Gateway) != 1 || iface.Gateway[0].String() != gateway || iface.Queues != queues {
		t.Errorf("memif.json = %+v, want network %s, ip mode, %s via %s, %d queues", iface, network, ip, gateway, queues)
	}
}

// TestL3NetworkThroughVPP: two pods in l3 network red get addresses from
// its subnet, VPP holds a route per pod in red's VRF and none in the
// default table, and memif.json tells each pod its address and gateway.
// An agent restart changes nothing in VPP, keeps the addresses and writes
// a memif.json lost meanwhile again; a networks.conf change (a new
// network, a new rx mode) applies without a restart; a pod whose
// annotation is refused gets no memif, and says why.
func TestL3NetworkThroughVPP(t *testing.T) {
	v := vpp.Start(t)
	dir := vppAgentDir(t)
	lister := newLivePods()
	first := startVPPAgentWith(t, v, dir, lister, "mtu: 9000\n", redNetworks)
	r1, r1State := first.addAnnotatedPod(t, "r1", "memif-000", `[{"network": "red", "queues": 2}]`)
	r2, r2State := first.addAnnotatedPod(t, "r2", "memif-001", `[{"network": "red"}]`)
	lister.set([]podapi.PodState{r1State, r2State})
	waitVPPMemifs(t, v, []string{"memif_default_r1_app_0", "memif_default_r2_app_0"})
	wantInterface(t, readMemifJSON(t, r1), "red", "10.70.0.2/24", "10.70.0.1", 2)
	wantInterface(t, readMemifJSON(t, r2), "red", "10.70.0.3/24", "10.70.0.1", 1)
	wantDeviceInfoAsMemifJSON(t, dir, r1)

	red, _ := netconf.Config{Networks: []netconf.Network{{Name: "red", Type: netconf.L3}}}.Network("red")
	table := fmt.Sprint(red.TableID())
	for _, dst := range []string{"10.70.0.2/32", "10.70.0.3/32"} {
		if out := v.CLI(t, "show", "ip", "fib", "table", table, dst); !strings.Contains(out, dst) || !strings.Contains(out, "memif") {
			t.Errorf("VRF %s lacks the route to %s via its memif:\n%s", table, dst, out)
		}
		if out := v.CLI(t, "show", "ip", "fib", "table", "0", dst); strings.Contains(out, "memif") {
			t.Errorf("the default table holds the pod route %s:\n%s", dst, out)
		}
	}
	if out := v.CLI(t, "show", "interface", "address"); !strings.Contains(out, "10.70.0.1/24") {
		t.Errorf("VPP does not hold red's gateway 10.70.0.1/24:\n%s", out)
	}
	first.Stop()
	// memif.json is not synced, and a node restart empties the socket
	// root (tmpfs on a node): the restarted agent writes it again.
	r1JSON := filepath.Join(filepath.Dir(r1.Annotations[dmapi.AnnotationSocketHost]), memifjson.FileName)
	if err := os.Remove(r1JSON); err != nil {
		t.Fatal(err)
	}

	second := startVPPAgentWith(t, v, dir, lister, "mtu: 9000\n", redNetworks)
	wantNoChanges(t, second, "restarted agent")
	poll.Until(t, vppWaitLimit, "the restarted agent writing r1's memif.json again", func() error {
		_, err := os.Stat(r1JSON)
		return err
	})
	wantInterface(t, readMemifJSON(t, r1), "red", "10.70.0.2/24", "10.70.0.1", 2)
	wantDeviceInfoAsMemifJSON(t, dir, r1)

	blue := "networks:\n  - {name: red, type: l3, subnet: 10.70.0.0/24, rx-mode: interrupt}\n" +
		"  - {name: blue, type: l3, subnet: 10.80.0.0/24}\n  - {name: lab, type: l2}\ndefault-network: lab\n"
	if err := os.WriteFile(filepath.Join(second.ConfigDir, "networks.conf"), []byte(blue), 0o600); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, vppWaitLimit, "the new rx mode reaches red's memifs", func() error {
		for _, memif := range second.DeviceManager.ListAllocations() {
			if len(memif.Networks) != 1 || memif.Networks[0].RxMode != "interrupt" {
				return fmt.Errorf("%s got %+v", memif.AllocationID, memif.Networks)
			}
		}
		return nil
	})
	b1, _ := second.addAnnotatedPod(t, "b1", "memif-002", `[{"network": "blue"}]`)
	waitVPPMemifs(t, v, []string{"memif_default_b1_app_0", "memif_default_r1_app_0", "memif_default_r2_app_0"})
	wantInterface(t, readMemifJSON(t, b1), "blue", "10.80.0.2/24", "10.80.0.1", 1)

	for _, bad := range []struct{ pod, device, annotation, reason string }{
		{"malformed", "memif-003", `{"network": "red"}`, "malformed"},
		{"unknown", "memif-004", `[{"network": "green"}]`, "unknown-network"},
		{"outside", "memif-005", `[{"network": "red", "ips": ["10.99.0.5/24"]}]`, "address-outside-subnet"},
	} {
		second.addAnnotatedPod(t, bad.pod, bad.device, bad.annotation)
		memifs, err := second.DeviceManager.BoundPodMemifs(podapi.PodID{Namespace: "default", Name: bad.pod})
		if err != nil || len(memifs) != 1 || len(memifs[0].Networks) != 1 || memifs[0].Networks[0].Reason != bad.reason {
			t.Errorf("pod %s: memifs %+v, %v; want one refused for %s", bad.pod, memifs, err, bad.reason)
		}
	}
	vppNames, err := vppMemifs(t, v)
	if err != nil {
		t.Fatal(err)
	}
	for name := range vppNames {
		if !slices.Contains([]string{"memif_default_b1_app_0", "memif_default_r1_app_0", "memif_default_r2_app_0"}, name) {
			t.Errorf("VPP holds %s, a memif whose spec was refused", name)
		}
	}
}

// memifNetworks is what the pod's memifs got, as the device manager
// records it (GetPodMemifInfo), or why there is none.
func (a *vppAgent) memifNetworks(name string) ([]dmapi.MemifNetwork, error) {
	memifs, err := a.DeviceManager.BoundPodMemifs(podapi.PodID{Namespace: "default", Name: name})
	if err != nil {
		return nil, err
	}
	if len(memifs) != 1 {
		return nil, fmt.Errorf("pod %s has %d memifs bound, want 1", name, len(memifs))
	}
	return memifs[0].Networks, nil
}

// wantRefused checks that the pod's one memif is refused for reason.
func (a *vppAgent) wantRefused(t *testing.T, name, reason string) {
	t.Helper()
	networks, err := a.memifNetworks(name)
	if err != nil || len(networks) != 1 || networks[0].Reason != reason {
		t.Fatalf("pod %s: memif networks %+v, %v; want one refused for %s", name, networks, err, reason)
	}
}

// waitWired waits until the pod's one memif is wired in network with ip.
func (a *vppAgent) waitWired(t *testing.T, name, network, ip string) {
	t.Helper()
	poll.Until(t, vppWaitLimit, fmt.Sprintf("pod %s wired in %s with %s", name, network, ip), func() error {
		networks, err := a.memifNetworks(name)
		if err != nil {
			return err
		}
		if len(networks) != 1 || networks[0].Refused != "" || networks[0].Network != network || !slices.Equal(networks[0].IPs, []string{ip}) {
			return fmt.Errorf("memif networks %+v", networks)
		}
		return nil
	})
}

// TestNetworksConfWrittenAfterStartThroughVPP: with no networks.conf at
// the agent's start, the file written later is applied, and the memif
// refused meanwhile for naming a network the file then declares is wired
// in VPP and told its address in memif.json.
func TestNetworksConfWrittenAfterStartThroughVPP(t *testing.T) {
	v := vpp.Start(t)
	a := startVPPAgentWith(t, v, vppAgentDir(t), newLivePods(), "mtu: 9000\n", "")
	early, _ := a.addAnnotatedPod(t, "early", "memif-000", `[{"network": "red"}]`)
	a.wantRefused(t, "early", "unknown-network")

	path := filepath.Join(a.ConfigDir, "networks.conf")
	if err := os.WriteFile(path, []byte(redNetworks), 0o600); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, vppWaitLimit, "networks.conf written after the start applied", func() error {
		if _, ok := a.Networks.Networks().Network("red"); !ok {
			return fmt.Errorf("networks %+v", a.Networks.Networks())
		}
		return nil
	})
	a.waitWired(t, "early", "red", "10.70.0.2/24")
	waitVPPMemifs(t, v, []string{"memif_default_early_app_0"})
	wantInterface(t, readMemifJSON(t, early), "red", "10.70.0.2/24", "10.70.0.1", 1)
}

// TestMemifRefusedForExhaustedSubnetWiredOnRelease: a memif refused
// because its network's subnet is exhausted is wired in VPP, and told its
// address in memif.json, once the pod holding the last address goes.
func TestMemifRefusedForExhaustedSubnetWiredOnRelease(t *testing.T) {
	v := vpp.Start(t)
	// A /30 holds one pod address beside the gateway.
	tiny := "networks:\n  - {name: tiny, type: l3, subnet: 10.71.0.0/30}\n"
	a := startVPPAgentWith(t, v, vppAgentDir(t), newLivePods(), "mtu: 9000\n", tiny)
	_, firstState := a.addAnnotatedPod(t, "first", "memif-000", `[{"network": "tiny"}]`)
	second, _ := a.addAnnotatedPod(t, "second", "memif-001", `[{"network": "tiny"}]`)
	a.waitWired(t, "first", "tiny", "10.71.0.2/30")
	a.wantRefused(t, "second", "subnet-exhausted")
	waitVPPMemifs(t, v, []string{"memif_default_first_app_0"})

	a.Push(t, &podapi.DeletePod{Pod: firstState.Pod})
	a.Barrier(t)
	a.waitWired(t, "second", "tiny", "10.71.0.2/30")
	waitVPPMemifs(t, v, []string{"memif_default_second_app_0"})
	wantInterface(t, readMemifJSON(t, second), "tiny", "10.71.0.2/30", "10.71.0.1", 1)
	tinyNetwork, _ := netconf.Config{Networks: []netconf.Network{{Name: "tiny", Type: netconf.L3}}}.Network("tiny")
	if out := v.CLI(t, "show", "ip", "fib", "table", fmt.Sprint(tinyNetwork.TableID()), "10.71.0.2/32"); !strings.Contains(out, "10.71.0.2/32") ||
		!strings.Contains(out, "memif") {
		t.Errorf("VRF of tiny lacks the route to 10.71.0.2/32 via a memif:\n%s", out)
	}
}
