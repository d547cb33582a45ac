package claims_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
)

// memifConfig is an opaque config for the driver, as the API server hands
// it out (JSON), from source, for requests (none: every request).
func memifConfig(source resourceapi.AllocationConfigSource, parameters string, requests ...string) resourceapi.DeviceAllocationConfiguration {
	return resourceapi.DeviceAllocationConfiguration{Source: source, Requests: requests, DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: driver, Parameters: runtime.RawExtension{Raw: []byte(parameters)}},
	}}
}

func config(fields string) string {
	return `{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "MemifConfig", ` + fields + `}`
}

// TestRequestSpecs: each request gets the MemifConfig that applies to it;
// a bad one refuses the claim, naming the config, the field and what to
// write.
func TestRequestSpecs(t *testing.T) {
	const claimSource, classSource = resourceapi.AllocationConfigSourceClaim, resourceapi.AllocationConfigSourceClass
	otherDriver := memifConfig(claimSource, `not JSON at all`)
	otherDriver.Opaque.Driver = "gpu.example.com"
	cases := []struct {
		name    string
		results []resourceapi.DeviceRequestAllocationResult
		configs []resourceapi.DeviceAllocationConfiguration
		// want is each request's network; "-" for no spec.
		want    map[string]string
		wantErr []string
	}{
		{"no config", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")}, nil,
			map[string]string{"net": "-"}, nil},
		{"one config for every request", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001"), result("ctl", node, "memif-dra-002")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(claimSource, config(`"network": "red"`))},
			map[string]string{"net": "red", "ctl": "red"}, nil},
		{"scoped to one request", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001"), result("ctl", node, "memif-dra-002")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(claimSource, config(`"network": "red"`), "net")},
			map[string]string{"net": "red", "ctl": "-"}, nil},
		{"the claim's overrides the class's", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(classSource, config(`"network": "lab"`)), memifConfig(claimSource, config(`"network": "red"`))},
			map[string]string{"net": "red"}, nil},
		{"a request's name covers its subrequest", []resourceapi.DeviceRequestAllocationResult{result("net/fast", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(claimSource, config(`"network": "red"`), "net")},
			map[string]string{"net": "red"}, nil},
		{"a subrequest's config, another subrequest allocated", []resourceapi.DeviceRequestAllocationResult{result("net/slow", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(claimSource, config(`"network": "red"`), "net/fast")},
			map[string]string{"net": "-"}, nil},
		{"another driver's config is not read", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{otherDriver}, map[string]string{"net": "-"}, nil},
		{"a bad config scoped to another request is not read", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(claimSource, `{`, "gpu")}, map[string]string{"net": "-"}, nil},
		{"a field of the wrong type", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(claimSource, config(`"network": "red", "queues": "two"`))}, nil,
			[]string{"claim ns/pod-memif", "opaque config 1 (from the claim)", `field "queues"`, "want a whole number", `"kind": "MemifConfig"`}},
		{"an unknown field", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(claimSource, config(`"netwrok": "red"`))}, nil,
			[]string{`unknown field "netwrok"`, "the fields are"}},
		{"another kind", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(classSource, `{"apiVersion": "memif.contivpp.io/v1alpha1", "kind": "GpuConfig", "network": "red"}`)}, nil,
			[]string{"opaque config 1 (from the device class)", `field "kind"`, "want MemifConfig"}},
		{"no parameters", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(claimSource, ``)}, nil, []string{"no parameters"}},
		{"a bad class config under a good claim config", []resourceapi.DeviceRequestAllocationResult{result("net", node, "memif-dra-001")},
			[]resourceapi.DeviceAllocationConfiguration{memifConfig(classSource, config(`"network": "lab", "mode": "tunnel"`)), memifConfig(claimSource, config(`"network": "red"`))}, nil,
			[]string{"opaque config 1 (from the device class)", `field "mode"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := allocatedClaim(tc.results)
			claim.Status.Allocation.Devices.Config = tc.configs
			got, err := claims.Requests(claim, driver, node)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Requests = %v, want an error", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			networks := map[string]string{}
			for _, request := range got {
				networks[request.Name] = "-"
				if request.Spec != nil {
					networks[request.Name] = request.Spec.Network
				}
			}
			if !equalMaps(networks, tc.want) {
				t.Errorf("requests' networks = %v, want %v", networks, tc.want)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestUnshared(t *testing.T) {
	pod := func(name string) resourceapi.ResourceClaimConsumerReference {
		return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: name, UID: types.UID("uid-" + name)}
	}
	cases := []struct {
		name      string
		consumers []resourceapi.ResourceClaimConsumerReference
		wantErr   []string
	}{
		{"one pod", []resourceapi.ResourceClaimConsumerReference{pod("a")}, nil},
		{"no pod yet", nil, nil},
		{"one pod and another kind of consumer", []resourceapi.ResourceClaimConsumerReference{pod("a"), {APIGroup: "example.com", Resource: "pods", Name: "x"}}, nil},
		{"two pods", []resourceapi.ResourceClaimConsumerReference{pod("a"), pod("b")},
			[]string{"memif claims cannot be shared", "claim ns/pod-memif is reserved for 2 pods (a, b)", "give each pod its own claim through a ResourceClaimTemplate"}},
		{"six pods", []resourceapi.ResourceClaimConsumerReference{pod("a"), pod("b"), pod("c"), pod("d"), pod("e"), pod("f")},
			[]string{"6 pods (a, b, c, d, and 2 more)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := claims.Unshared(allocatedClaim(nil, tc.consumers...))
			if tc.wantErr == nil {
				if err != nil {
					t.Errorf("Unshared = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, claims.ErrShared) {
				t.Fatalf("Unshared = %v, want ErrShared", err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestCDINetworkEnv: what the memifs got from the networks reaches the
// container as env, one value per memif in memif ID order, the secret in
// MEMIF_SECRET alone.
func TestCDINetworkEnv(t *testing.T) {
	red := func(id uint32, ip string) dmapi.MemifNetwork {
		return dmapi.MemifNetwork{MemifID: id, Network: "red", Mode: "ip", IPs: []string{ip}, Gateway: []string{"10.70.0.1"},
			Queues: 2, RingSize: 1024, BufferSize: 2048, MTU: 9000, RxMode: "polling"}
	}
	cases := []struct {
		name     string
		networks []dmapi.MemifNetwork
		want     []string
	}{
		{"an l3 memif", []dmapi.MemifNetwork{red(0, "10.70.0.2/24")}, []string{"MEMIF_NETWORK=red", "MEMIF_MODE=ip", "MEMIF_IP=10.70.0.2/24",
			"MEMIF_GATEWAY=10.70.0.1", "MEMIF_QUEUES=2", "MEMIF_RING_SIZE=1024", "MEMIF_BUFFER_SIZE=2048", "MEMIF_MTU=9000"}},
		{"two memifs, listed out of order", []dmapi.MemifNetwork{red(1, "10.70.0.3/24"), red(0, "10.70.0.2/24")},
			[]string{"MEMIF_NETWORK=red,red", "MEMIF_IP=10.70.0.2/24,10.70.0.3/24", "MEMIF_GATEWAY=10.70.0.1,10.70.0.1"}},
		{"an l2 memif with a MAC", []dmapi.MemifNetwork{{Network: "lab", Mode: "ethernet", MAC: "02:fe:00:00:00:01", Queues: 1, RingSize: 1024, BufferSize: 2048}},
			[]string{"MEMIF_NETWORK=lab", "MEMIF_MODE=ethernet", "MEMIF_MAC=02:fe:00:00:00:01", "MEMIF_QUEUES=1"}},
		{"no networks", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
			if err != nil {
				t.Fatal(err)
			}
			requests := prepared("net")
			requests[0].Memif.Networks = tc.networks
			if err := cache.WriteSpec(claims.CDISpec("claim-uid", requests, "/run/vpp"), claims.CDISpecName("claim-uid")); err != nil {
				t.Fatalf("the CDI library refuses the spec: %v", err)
			}
			if err := cache.Refresh(); err != nil {
				t.Fatal(err)
			}
			oci := ociSpec()
			if unresolved, err := cache.InjectDevices(oci, claims.CDIDeviceID("claim-uid", "net")); err != nil {
				t.Fatalf("inject = %v, %v", unresolved, err)
			}
			for _, want := range tc.want {
				if !slices.Contains(oci.Process.Env, want) {
					t.Errorf("container env %v lacks %s", oci.Process.Env, want)
				}
			}
			var secrets int
			for _, env := range oci.Process.Env {
				if strings.Contains(env, "secret-of-net") {
					secrets++
				}
				if strings.HasPrefix(env, "MEMIF_RX") || strings.HasSuffix(env, "=") {
					t.Errorf("container env has %s: an unlisted or empty variable", env)
				}
			}
			if secrets != 1 || !slices.Contains(oci.Process.Env, "MEMIF_SECRET=secret-of-net") {
				t.Errorf("container env %v holds the secret %d times, want once, in MEMIF_SECRET", oci.Process.Env, secrets)
			}
			if tc.networks == nil && len(oci.Process.Env) != 3 {
				t.Errorf("a memif in no network: env %v, want PATH, MEMIF_SOCKET and MEMIF_SECRET only", oci.Process.Env)
			}
		})
	}
}
