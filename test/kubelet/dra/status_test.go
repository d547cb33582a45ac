package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/contivpp/memif-agent/internal/inprocess"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/plugins/networks"
	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// statusLimit bounds the wait for a claim's status once what it shows is
// so: the agent writes a change within about 2 s.
const statusLimit = 10 * time.Second

// TestClaimStatusOnARealNode: the claim of a running pod shows its device
// in status.devices with memif.json's entry as data, Ready True and, with
// no pod side connected (no VPP on this node), LinkUp False
// (PodSideNotConnected); once the device manager releases the claim (as
// kubelet's unprepare does), its entries go while the claim stays
// allocated and reserved.
func TestClaimStatusOnARealNode(t *testing.T) {
	c, client := startCluster(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx := t.Context()
	a := startAgent(t, c, client)
	claim, iface := claimedPod(ctx, t, client, a, "memif-status", "")
	entry, err := json.Marshal(iface)
	if err != nil {
		t.Fatal(err)
	}

	poll.Every(t, statusLimit, 200*time.Millisecond, "the claim's device in its status", func() error {
		claim, err := client.ResourceV1().ResourceClaims(namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		devices := ours(claim)
		if len(devices) != 1 || claim.Status.Allocation == nil || devices[0].Device != claim.Status.Allocation.Devices.Results[0].Device {
			return fmt.Errorf("status.devices %+v, want the allocated device of %s", claim.Status.Devices, claims.DefaultDriverName)
		}
		d := devices[0]
		if d.Data == nil || !jsonEqual(d.Data.Raw, entry) {
			return fmt.Errorf("data %s, want memif.json's entry %s", d.Data, entry)
		}
		if ready := meta.FindStatusCondition(d.Conditions, "Ready"); ready == nil || ready.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %+v, want True", ready)
		}
		if link := meta.FindStatusCondition(d.Conditions, "LinkUp"); link == nil || link.Status != metav1.ConditionFalse || link.Reason != "PodSideNotConnected" {
			return fmt.Errorf("LinkUp %+v, want False (PodSideNotConnected)", link)
		}
		return nil
	})

	ref := dmapi.ClaimRef{UID: string(claim.UID), Namespace: namespace, Name: claim.Name}
	if err := a.DeviceManager.ClaimPreparer().Unprepare(ctx, ref); err != nil {
		t.Fatalf("release the claim: %v", err)
	}
	poll.Every(t, statusLimit, 200*time.Millisecond, "the claim's entries gone, the claim still allocated", func() error {
		claim, err := client.ResourceV1().ResourceClaims(namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if claim.Status.Allocation == nil || len(claim.Status.ReservedFor) == 0 {
			return errors.New("the claim is no longer allocated and reserved: the test shows nothing")
		}
		if devices := ours(claim); len(devices) != 0 {
			return fmt.Errorf("status.devices %+v, want none of %s", devices, claims.DefaultDriverName)
		}
		return nil
	})
}

// TestClaimStatusOfAMemifInANetwork: a claim whose MemifConfig puts its
// memif in l3 network red gets its device's status with the memif's
// address in networkData.ips, as memif.json gives it. The claim's opaque
// parameters are JSON with spaces, as a Go program writes them (client-go
// sends them in protobuf, which keeps their bytes): the API server refuses
// a write of such a claim's status that re-encodes the claim (server-side
// apply, a patch) as a change of its allocation, so the status is there
// only because the agent writes it as an update of the claim as read.
func TestClaimStatusOfAMemifInANetwork(t *testing.T) {
	c, client := startCluster(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx := t.Context()
	red := netconf.Config{Networks: []netconf.Network{{Name: "red", Type: netconf.L3, Subnet: "10.70.0.0/24"}}}
	a := runAgent(t, c, claimsOnly(), driverConfig(c, c.HostPath("/var/lib/kubelet/plugins_registry")),
		inprocess.Options{DRAClient: client, Configs: map[string]any{networks.PluginName: red}})
	waitRegistered(t, a)
	config := fmt.Sprintf(`{"apiVersion": %q, "kind": %q, "network": "red"}`, memifspec.APIVersion, memifspec.Kind)
	claim, iface := claimedPod(ctx, t, client, a, "memif-red", config)
	if len(iface.IPs) != 1 {
		t.Fatalf("memif.json's interface %+v, want one address", iface)
	}
	want := iface.IPs[0].String()
	poll.Every(t, statusLimit, 200*time.Millisecond, "the claim's device in its status with its address "+want, func() error {
		claim, err := client.ResourceV1().ResourceClaims(namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		devices := ours(claim)
		if len(devices) != 1 || claim.Status.Allocation == nil || devices[0].Device != claim.Status.Allocation.Devices.Results[0].Device {
			return fmt.Errorf("status.devices %+v, want the allocated device of %s", claim.Status.Devices, claims.DefaultDriverName)
		}
		d := devices[0]
		if ready := meta.FindStatusCondition(d.Conditions, "Ready"); ready == nil || ready.Status != metav1.ConditionTrue {
			return fmt.Errorf("Ready %+v, want True", ready)
		}
		if d.NetworkData == nil || !slices.Equal(d.NetworkData.IPs, []string{want}) {
			return fmt.Errorf("networkData %+v, want ips [%s] as memif.json", d.NetworkData, want)
		}
		return nil
	})
}

// claimedPod creates claim name (with config, when set, as its opaque
// parameters) and a pod of that name using it, waits until the pod runs,
// and returns the claim and the one interface of the pod's memif.json.
func claimedPod(ctx context.Context, t *testing.T, client kubernetes.Interface, a *agent, name, config string) (*resourceapi.ResourceClaim, memifjson.Interface) {
	t.Helper()
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: "memif", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: claims.DefaultDriverName}}}}}
	if config != "" {
		spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{Requests: []string{"memif"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
			Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: claims.DefaultDriverName, Parameters: runtime.RawExtension{Raw: []byte(config)}}}}}
	}
	claim, err := client.ResourceV1().ResourceClaims(namespace).Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a claim: %v", err)
	}
	pod := podOf(name, cluster.PauseImage, nil, true)
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "memif", ResourceClaimName: ptr.To(claim.Name)}}
	createPod(ctx, t, client, pod)
	waitRunning(ctx, t, client, pod.Name)
	memif := podMemif(t, a, pod.Name)
	content, err := os.ReadFile(filepath.Join(memif.HostDir, memifjson.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var file memifjson.File
	if err := json.Unmarshal(content, &file); err != nil || len(file.Interfaces) != 1 {
		t.Fatalf("memif.json %s: %v, want one interface", content, err)
	}
	return claim, file.Interfaces[0]
}

// ours are the claim's status.devices of the driver.
func ours(claim *resourceapi.ResourceClaim) []resourceapi.AllocatedDeviceStatus {
	var devices []resourceapi.AllocatedDeviceStatus
	for _, d := range claim.Status.Devices {
		if d.Driver == claims.DefaultDriverName {
			devices = append(devices, d)
		}
	}
	return devices
}

// jsonEqual tells whether a and b hold the same JSON value: the API server
// writes an object's keys in an order of its own.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}
