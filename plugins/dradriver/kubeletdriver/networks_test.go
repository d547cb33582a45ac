package kubeletdriver_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/assign"
	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

const redAndLab = "networks:\n  - {name: red, type: l3, subnet: 10.70.0.0/24}\n  - {name: lab, type: l2}\ndefault-network: lab\n"

// fakeNetworksPlugin hands out a fixed networks.conf, as the networks
// plugin hands out the file it read.
type fakeNetworksPlugin struct{ config netconf.Config }

func (f fakeNetworksPlugin) Networks() netconf.Config { return f.config }

// newWiring is the agent's memif wiring over dm, its networks
// networksConf, its addresses kept beside dm's checkpoint.
func newWiring(t *testing.T, dm *manager.Manager, networksConf string) *wiring.Handler {
	t.Helper()
	networks, err := netconf.Decode([]byte(networksConf))
	if err != nil {
		t.Fatal(err)
	}
	assigner, err := assign.Open(dm.NetworksStatePath())
	if err != nil {
		t.Fatal(err)
	}
	handler, err := wiring.NewHandler(dm, wiring.Config{}, wiring.Options{
		Networks: fakeNetworksPlugin{networks}, Assigner: assigner, Recorder: dm, Log: testlog.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	return handler
}

// withConfig gives the claim an opaque config of the driver for requests
// (none: all of them).
func withConfig(parameters string, requests ...string) func(*resourceapi.ResourceClaim) {
	return func(claim *resourceapi.ResourceClaim) {
		claim.Status.Allocation.Devices.Config = append(claim.Status.Allocation.Devices.Config, resourceapi.DeviceAllocationConfiguration{
			Source: resourceapi.AllocationConfigSourceClaim, Requests: requests,
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
				Driver: claims.DefaultDriverName, Parameters: runtime.RawExtension{Raw: []byte(parameters)},
			}},
		})
	}
}

func memifConfig(fields string) string {
	return `{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "MemifConfig", ` + fields + `}`
}

// TestClaimMemifConfigReachesTheContainer: a claim whose MemifConfig puts
// its memif in l3 network red gets its network, mode and address in the
// container's env (the CDI spec, injected as the runtime does) and in the
// memif.json its pod reads once the memif is wired; the secret is in
// MEMIF_SECRET alone.
func TestClaimMemifConfigReachesTheContainer(t *testing.T) {
	n := startNodeWith(t, redAndLab)
	n.allocateWith(t, claimUID, claimName, withConfig(memifConfig(`"network": "red", "mode": "ip", "queues": 2, "mtu": 9000`)), "memif-dra-001")

	if prepared := n.prepare(t, claimUID, claimName); prepared.GetError() != "" {
		t.Fatalf("NodePrepareResources: %s", prepared.GetError())
	}
	memif, err := n.dm.GetPodMemifInfo(podapi.PodID{Namespace: claimNS, Name: "dpdk"})
	if err != nil {
		t.Fatal(err)
	}
	env, _ := inject(t, n.cfg.CDIDir, claims.CDIDeviceID(claimUID, requestName))
	for _, want := range []string{"MEMIF_NETWORK=red", "MEMIF_MODE=ip", "MEMIF_IP=10.70.0.2/24", "MEMIF_GATEWAY=10.70.0.1",
		"MEMIF_QUEUES=2", "MEMIF_MTU=9000", dmapi.EnvMemifSocket + "=" + memif.ContainerSocket, dmapi.EnvMemifSecret + "=" + memif.Secret} {
		if !slices.Contains(env, want) {
			t.Errorf("the container's env %v lacks %s", env, want)
		}
	}
	if held := slices.DeleteFunc(slices.Clone(env), func(e string) bool { return !strings.Contains(e, memif.Secret) }); len(held) != 1 {
		t.Errorf("the secret is in %v, want MEMIF_SECRET alone", held)
	}

	// The pod's sandbox is seen: the memif is wired and memif.json written.
	if err := n.loop.PushEvent(&podapi.AddPod{Pod: podapi.Pod{ID: podapi.PodID{Namespace: claimNS, Name: "dpdk"}, UID: podUID}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(memif.HostDir, memifjson.FileName)
	var file memifjson.File
	poll.Until(t, waitLimit, "memif.json of the claim's memif", func() error {
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(content), memif.Secret) {
			t.Fatalf("memif.json holds the secret: %s", content)
		}
		return json.Unmarshal(content, &file)
	})
	if len(file.Interfaces) != 1 || file.Interfaces[0].Network != "red" || file.Interfaces[0].Mode != "ip" ||
		fmt.Sprint(file.Interfaces[0].IPs) != "[10.70.0.2/24]" || fmt.Sprint(file.Interfaces[0].Gateway) != "[10.70.0.1]" || file.Interfaces[0].Queues != 2 {
		t.Errorf("memif.json = %+v, want memif 0 in red, ip mode, 10.70.0.2/24 via 10.70.0.1, 2 queues", file)
	}
}

// TestPrepareRefusesBadClaims: a claim whose MemifConfig is malformed or
// names what the node does not have, or that is shared, fails its prepare
// with a message saying what to change (kubelet shows it in the pod's
// events); nothing of it stays allocated: no directory, no device, no
// address, no CDI spec, so the next claim gets all of them.
func TestPrepareRefusesBadClaims(t *testing.T) {
	n := startNodeWith(t, redAndLab)
	twoRequests := func(claim *resourceapi.ResourceClaim) {
		claim.Status.Allocation.Devices.Results = []resourceapi.DeviceRequestAllocationResult{
			{Request: "good", Driver: claims.DefaultDriverName, Pool: nodeName, Device: "memif-dra-001"},
			{Request: "bad", Driver: claims.DefaultDriverName, Pool: nodeName, Device: "memif-dra-002"},
		}
	}
	cases := []struct {
		name string
		edit []func(*resourceapi.ResourceClaim)
		want []string
	}{
		{"malformed", []func(*resourceapi.ResourceClaim){withConfig(memifConfig(`"network": "red", "queues": "two"`))},
			[]string{"opaque config 1 (from the claim)", `field "queues"`, "want a whole number", `"kind": "MemifConfig"`}},
		{"a list, not an object", []func(*resourceapi.ResourceClaim){withConfig(`["network", "red"]`)}, []string{"want a JSON object"}},
		{"an unknown network", []func(*resourceapi.ResourceClaim){withConfig(memifConfig(`"network": "blue"`))},
			[]string{`no network "blue" on this node`, "unknown-network"}},
		{"a mode its network cannot carry", []func(*resourceapi.ResourceClaim){withConfig(memifConfig(`"network": "lab", "mode": "ip"`))},
			[]string{`"lab" carries ethernet memifs`}},
		{"one request refused, the other's address returned", []func(*resourceapi.ResourceClaim){twoRequests,
			withConfig(memifConfig(`"network": "red"`), "good"), withConfig(memifConfig(`"network": "blue"`), "bad")},
			[]string{`request "bad"`, `no network "blue"`}},
		{"shared by two pods", []func(*resourceapi.ResourceClaim){func(claim *resourceapi.ResourceClaim) {
			claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "dpdk-2", UID: "uid-2"})
		}}, []string{"memif claims cannot be shared", "reserved for 2 pods (dpdk, dpdk-2)", "give each pod its own claim through a ResourceClaimTemplate"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			uid := fmt.Sprintf("%08d-1b2c-4d5e-8f90-0123456789ab", i)
			name := fmt.Sprintf("bad-%d", i)
			n.allocateWith(t, uid, name, func(claim *resourceapi.ResourceClaim) {
				for _, edit := range tc.edit {
					edit(claim)
				}
			}, "memif-dra-001")
			prepared := n.prepare(t, uid, name)
			for _, want := range tc.want {
				if !strings.Contains(prepared.GetError(), want) {
					t.Errorf("NodePrepareResources error %q does not say %q", prepared.GetError(), want)
				}
			}
			if len(prepared.GetDevices()) != 0 {
				t.Errorf("a refused claim got devices %v", prepared.GetDevices())
			}
			if _, err := os.Stat(filepath.Join(n.cfg.CDIDir, claims.CDISpecName(uid))); !os.IsNotExist(err) {
				t.Errorf("a refused claim has a CDI spec: %v", err)
			}
			if list := n.dm.ListAllocations(); len(list) != 0 {
				t.Errorf("after the refusal the node holds %v", list)
			}
			if entries, err := os.ReadDir(n.cfg.SocketRoot); err != nil || len(entries) != 0 {
				t.Errorf("socket root after the refusal: %v, %v; want it empty", entries, err)
			}
		})
	}

	n.allocateWith(t, claimUID, claimName, withConfig(memifConfig(`"network": "red"`)), "memif-dra-001")
	if prepared := n.prepare(t, claimUID, claimName); prepared.GetError() != "" {
		t.Fatalf("a good claim after the refusals: %s", prepared.GetError())
	}
	env, _ := inject(t, n.cfg.CDIDir, claims.CDIDeviceID(claimUID, requestName))
	if !slices.Contains(env, "MEMIF_IP=10.70.0.2/24") {
		t.Errorf("the claim after the refusals gets env %v, want red's first address 10.70.0.2/24: a refused claim kept one", env)
	}
}

// TestPrepareRefusalLeavesThePreparedAlone: a refused claim changes
// nothing of a claim prepared before it.
func TestPrepareRefusalLeavesThePreparedAlone(t *testing.T) {
	n := startNodeWith(t, redAndLab)
	n.allocateWith(t, claimUID, claimName, withConfig(memifConfig(`"network": "red"`)), "memif-dra-001")
	if prepared := n.prepare(t, claimUID, claimName); prepared.GetError() != "" {
		t.Fatal(prepared.GetError())
	}
	before := n.dm.ListAllocations()
	const refusedUID = "99999999-1b2c-4d5e-8f90-0123456789ab"
	n.allocateWith(t, refusedUID, "refused", withConfig(memifConfig(`"network": "blue"`)), "memif-dra-002")
	if prepared := n.prepare(t, refusedUID, "refused"); prepared.GetError() == "" {
		t.Fatal("a claim in an unknown network is prepared")
	}
	after := n.dm.ListAllocations()
	if len(after) != 1 || after[0].AllocationID != before[0].AllocationID {
		t.Errorf("the node held %v before the refusal and %v after", before, after)
	}
	if prepared := n.prepare(t, claimUID, claimName); prepared.GetError() != "" {
		t.Errorf("preparing the first claim again: %s", prepared.GetError())
	}
	env, _ := inject(t, n.cfg.CDIDir, claims.CDIDeviceID(claimUID, requestName))
	if !slices.Contains(env, "MEMIF_IP=10.70.0.2/24") {
		t.Errorf("the first claim's env is now %v, want its address 10.70.0.2/24 still", env)
	}
}
