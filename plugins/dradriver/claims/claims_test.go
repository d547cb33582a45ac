package claims_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

const (
	driver = claims.DefaultDriverName
	node   = "node-1"
)

func allocatedClaim(results []resourceapi.DeviceRequestAllocationResult, reservedFor ...resourceapi.ResourceClaimConsumerReference) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-memif", UID: "claim-uid"},
		Status: resourceapi.ResourceClaimStatus{
			Allocation:  &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}},
			ReservedFor: reservedFor,
		},
	}
}

func result(request, pool, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: pool, Device: device}
}

func TestRequests(t *testing.T) {
	other := result("gpu", node, "gpu-0")
	other.Driver = "gpu.example.com"
	cases := []struct {
		name    string
		claim   *resourceapi.ResourceClaim
		want    []dmapi.ClaimRequest
		wantErr string
	}{
		{"one request, one device", allocatedClaim([]resourceapi.DeviceRequestAllocationResult{result("memif", node, "memif-dra-003")}),
			[]dmapi.ClaimRequest{{Name: "memif", DeviceIDs: []string{"memif-dra-003"}}}, ""},
		{"a request of two devices and another, another driver's left out", allocatedClaim([]resourceapi.DeviceRequestAllocationResult{
			result("net", node, "memif-dra-001"), other, result("ctl", node, "memif-dra-000"), result("net", node, "memif-dra-002"),
		}), []dmapi.ClaimRequest{{Name: "net", DeviceIDs: []string{"memif-dra-001", "memif-dra-002"}}, {Name: "ctl", DeviceIDs: []string{"memif-dra-000"}}}, ""},
		{"subrequests count as their request", allocatedClaim([]resourceapi.DeviceRequestAllocationResult{result("net/fast", node, "memif-dra-001")}),
			[]dmapi.ClaimRequest{{Name: "net", DeviceIDs: []string{"memif-dra-001"}}}, ""},
		{"nothing of this driver", allocatedClaim([]resourceapi.DeviceRequestAllocationResult{other}), nil, ""},
		{"another node's pool", allocatedClaim([]resourceapi.DeviceRequestAllocationResult{result("memif", "node-2", "memif-dra-000")}), nil, `pool "node-2"`},
		{"not allocated", &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, nil, "not allocated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := claims.Requests(tc.claim, driver, node)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Requests = %v, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.EqualFunc(got, tc.want, func(a, b dmapi.ClaimRequest) bool {
				return a.Name == b.Name && slices.Equal(a.DeviceIDs, b.DeviceIDs)
			}) {
				t.Errorf("Requests = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := claims.Requests(&resourceapi.ResourceClaim{}, driver, node); !errors.Is(err, claims.ErrNotAllocated) {
		t.Errorf("an unallocated claim's error %v does not match ErrNotAllocated", err)
	}
}

func TestPod(t *testing.T) {
	pod := func(name, uid string) resourceapi.ResourceClaimConsumerReference {
		return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: name, UID: types.UID("uid-" + uid)}
	}
	cases := []struct {
		name     string
		consumer []resourceapi.ResourceClaimConsumerReference
		want     podapi.Pod
	}{
		{"the one pod", []resourceapi.ResourceClaimConsumerReference{pod("web", "1")}, podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "web"}, UID: "uid-1"}},
		{"no consumer", nil, podapi.Pod{}},
		{"shared by two pods", []resourceapi.ResourceClaimConsumerReference{pod("a", "1"), pod("b", "2")}, podapi.Pod{}},
		{"a non-pod consumer", []resourceapi.ResourceClaimConsumerReference{{APIGroup: "example.com", Resource: "pods", Name: "x", UID: "u"}}, podapi.Pod{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := claims.Pod(allocatedClaim(nil, tc.consumer...)); got != tc.want {
				t.Errorf("Pod = %v, want %v", got, tc.want)
			}
		})
	}
}

func prepared(requests ...string) []dmapi.PreparedRequest {
	var list []dmapi.PreparedRequest
	for _, request := range requests {
		list = append(list, dmapi.PreparedRequest{Request: request, Memif: dmapi.MemifInfo{
			AllocationID: "memif-dra-000-0a1b2c3d", HostDir: "/var/run/contiv/memif/" + request,
			ContainerSocket: "/run/vpp/memif.sock", Secret: "secret-of-" + request,
		}})
	}
	return list
}

// TestCDISpecAsTheRuntimeSeesIt writes the spec with the CDI library and
// injects its devices into an OCI spec as containerd does.
func TestCDISpecAsTheRuntimeSeesIt(t *testing.T) {
	dir := t.TempDir()
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	spec := claims.CDISpec("claim-uid", prepared("net", "ctl"), "/run/vpp")
	if err := cache.WriteSpec(spec, claims.CDISpecName("claim-uid")); err != nil {
		t.Fatalf("the CDI library refuses the spec: %v", err)
	}
	if err := cache.Refresh(); err != nil {
		t.Fatal(err)
	}
	for _, request := range []string{"net", "ctl"} {
		t.Run(request, func(t *testing.T) {
			id := claims.CDIDeviceID("claim-uid", request)
			if _, _, _, err := parser.ParseQualifiedName(id); err != nil {
				t.Fatalf("CDI device ID %q: %v", id, err)
			}
			oci := ociSpec()
			if unresolved, err := cache.InjectDevices(oci, id); err != nil {
				t.Fatalf("inject %s = %v, %v", id, unresolved, err)
			}
			wantEnv := []string{"MEMIF_SOCKET=/run/vpp/memif.sock", "MEMIF_SECRET=secret-of-" + request}
			for _, env := range wantEnv {
				if !slices.Contains(oci.Process.Env, env) {
					t.Errorf("container env %v lacks %s", oci.Process.Env, env)
				}
			}
			if len(oci.Mounts) != 1 || oci.Mounts[0].Source != "/var/run/contiv/memif/"+request || oci.Mounts[0].Destination != "/run/vpp" {
				t.Errorf("container mounts = %+v, want the request's directory at /run/vpp", oci.Mounts)
			}
		})
	}
}

func TestSliceDevices(t *testing.T) {
	cases := []struct {
		name       string
		count      int
		wantSlices []int
	}{
		{"none", 0, nil},
		{"one", 1, []int{1}},
		{"a full slice", claims.MaxDevicesPerSlice, []int{claims.MaxDevicesPerSlice}},
		{"one more than a slice", claims.MaxDevicesPerSlice + 1, []int{claims.MaxDevicesPerSlice, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ids := make([]string, tc.count)
			for i := range ids {
				ids[i] = "memif-dra-" + string(rune('a'+i%26))
			}
			got := claims.SliceDevices(ids, "/var/run/contiv/memif", "/run/vpp")
			var sizes []int
			index := int64(0)
			for _, devices := range got {
				sizes = append(sizes, len(devices))
				for _, device := range devices {
					if *device.Attributes[claims.AttributeIndex].IntValue != index || device.Name != ids[index] {
						t.Errorf("device %s has index %d, want %s at %d", device.Name, *device.Attributes[claims.AttributeIndex].IntValue, ids[index], index)
					}
					index++
				}
			}
			if !slices.Equal(sizes, tc.wantSlices) {
				t.Errorf("slice sizes %v, want %v", sizes, tc.wantSlices)
			}
		})
	}
}

func TestSliceDevicesCarryNoSecret(t *testing.T) {
	devices := claims.SliceDevices([]string{"memif-dra-000"}, "/var/run/contiv/memif", "/run/vpp")[0]
	encoded, err := json.Marshal(devices)
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"secret", "MEMIF_SECRET"} {
		if strings.Contains(strings.ToLower(string(encoded)), strings.ToLower(word)) {
			t.Errorf("slice devices mention %q: %s", word, encoded)
		}
	}
	want := map[resourceapi.QualifiedName]string{claims.AttributeSocketRoot: "/var/run/contiv/memif", claims.AttributeContainerDir: "/run/vpp"}
	for name, value := range want {
		if got := devices[0].Attributes[name].StringValue; got == nil || *got != value {
			t.Errorf("attribute %s = %v, want %q", name, got, value)
		}
	}
}
