package kubeletdriver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/plugins/dradriver/kubeletdriver"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

const (
	nodeName    = "node-1"
	waitLimit   = 20 * time.Second
	claimUID    = "6f1c2a4e-1b2c-4d5e-8f90-0123456789ab"
	podUID      = "0b7e3c1d-2f4a-4b6c-9d8e-abcdefabcdef"
	claimName   = "dpdk-memif"
	claimNS     = "default"
	requestName = "memif"
)

// node is the real device manager on the real event loop, the driver in
// front of it, and the API server stood in for by client-go's fake
// clientset (no API server runs here).
type node struct {
	dm          *manager.Manager
	loop        controllerapi.EventLoop
	driver      *kubeletdriver.Driver
	apiServer   *fakeapiserver.Clientset
	cfg         kubeletdriver.Config
	kubelet     drapb.DRAPluginClient
	registrarIn string
}

func startNode(t *testing.T) *node {
	t.Helper()
	return startNodeWith(t, "")
}

// startNodeWith starts a node whose networks.conf is networksConf; when it
// is set, the memif wiring runs after the device manager, as in the
// agent, and checks each claim's MemifConfig against those networks.
func startNodeWith(t *testing.T, networksConf string) *node {
	t.Helper()
	dir := t.TempDir()
	dm := devicemanagertest.New(t, nil)
	handlers := []controllerapi.EventHandler{dm}
	if networksConf != "" {
		handlers = append(handlers, newWiring(t, dm, networksConf))
	}
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, handlers...)
	pool := dm.ClaimPool()
	n := &node{dm: dm, loop: loop,
		apiServer: fakeapiserver.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}}),
		cfg: kubeletdriver.Config{
			DriverName: claims.DefaultDriverName, NodeName: nodeName,
			PluginDataDir: filepath.Join(dir, "plugins", claims.DefaultDriverName), RegistrarDir: filepath.Join(dir, "plugins_registry"),
			CDIDir: filepath.Join(dir, "cdi"), SocketRoot: pool.SocketRoot, ContainerDir: pool.ContainerDir, Devices: pool.Devices,
			Claims: dm.ClaimPreparer(loop),
		},
		registrarIn: filepath.Join(dir, "plugins_registry", claims.DefaultDriverName+"-reg.sock"),
	}
	n.startDriver(t)
	return n
}

// startDriver starts a driver for the node's device manager, as the agent
// does when it starts, and a kubelet client of it; t's end stops them.
func (n *node) startDriver(t *testing.T) {
	t.Helper()
	driver, err := kubeletdriver.New(n.cfg, n.apiServer, testlog.New(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := driver.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { driver.Stop(); cancel() })
	conn, err := grpc.NewClient("unix://"+driver.PluginSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	n.driver, n.kubelet = driver, drapb.NewDRAPluginClient(conn)
}

// allocate stores the claim as the scheduler leaves it: allocated from
// this node's pool and reserved for its pod.
func (n *node) allocate(t *testing.T, uid, name string, devices ...string) *resourceapi.ResourceClaim {
	t.Helper()
	return n.allocateWith(t, uid, name, func(*resourceapi.ResourceClaim) {}, devices...)
}

// allocateWith stores the claim as allocate does, after edit changed it.
func (n *node) allocateWith(t *testing.T, uid, name string, edit func(*resourceapi.ResourceClaim), devices ...string) *resourceapi.ResourceClaim {
	t.Helper()
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: claimNS, Name: name, UID: types.UID(uid)}}
	for _, device := range devices {
		claim.Status.Allocation = &resourceapi.AllocationResult{}
		claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: requestName, Driver: claims.DefaultDriverName, Pool: nodeName, Device: device,
		})
	}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "dpdk", UID: podUID}}
	edit(claim)
	if _, err := n.apiServer.ResourceV1().ResourceClaims(claimNS).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return claim
}

func (n *node) prepare(t *testing.T, uid, name string) *drapb.NodePrepareResourceResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	response, err := n.kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: claimNS, Uid: uid, Name: name}}})
	if err != nil {
		t.Fatalf("NodePrepareResources: %v", err)
	}
	return response.Claims[uid]
}

func (n *node) unprepare(t *testing.T, uid, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	response, err := n.kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: claimNS, Uid: uid, Name: name}}})
	if err != nil {
		t.Fatalf("NodeUnprepareResources: %v", err)
	}
	return response.Claims[uid].GetError()
}

func TestPrepareAndUnprepareOverKubeletsSocket(t *testing.T) {
	n := startNode(t)
	n.allocate(t, claimUID, claimName, "memif-dra-001")

	prepared := n.prepare(t, claimUID, claimName)
	wantID := claims.CDIDeviceID(claimUID, requestName)
	if prepared.GetError() != "" || len(prepared.Devices) != 1 || !slices.Equal(prepared.Devices[0].CdiDeviceIds, []string{wantID}) ||
		prepared.Devices[0].PoolName != nodeName || prepared.Devices[0].DeviceName != "memif-dra-001" {
		t.Fatalf("NodePrepareResources = %v, want memif-dra-001 of %s as %s", prepared, nodeName, wantID)
	}
	memif, err := n.dm.GetPodMemifInfo(podapi.PodID{Namespace: claimNS, Name: "dpdk"})
	if err != nil || memif.PodUID != podUID || !slices.Equal(memif.DeviceIDs, []string{"memif-dra-001"}) {
		t.Fatalf("GetPodMemifInfo before any container = %v, %v; want the claim's memif", memif, err)
	}
	specPath := filepath.Join(n.cfg.CDIDir, claims.CDISpecName(claimUID))
	assertMode(t, specPath, 0o600)
	assertMode(t, n.cfg.CDIDir, 0o700)
	env, mounts := inject(t, n.cfg.CDIDir, wantID)
	if !slices.Contains(env, dmapi.EnvMemifSecret+"="+memif.Secret) || !slices.Contains(env, dmapi.EnvMemifSocket+"="+memif.ContainerSocket) ||
		len(mounts) != 1 || mounts[0].Source != memif.HostDir || mounts[0].Destination != n.cfg.ContainerDir {
		t.Errorf("the container gets env %v, mounts %+v; want %s's socket, secret and directory", env, mounts, memif.AllocationID)
	}

	// kubelet retries, and prepares again after its restart.
	if again := n.prepare(t, claimUID, claimName); again.GetError() != "" || !slices.Equal(again.Devices[0].CdiDeviceIds, []string{wantID}) {
		t.Errorf("preparing again = %v", again)
	}
	if list := n.dm.ListAllocations(); len(list) != 1 || list[0].Secret != memif.Secret {
		t.Errorf("after preparing twice the node holds %v, want the one allocation", list)
	}

	if msg := n.unprepare(t, claimUID, claimName); msg != "" {
		t.Fatalf("NodeUnprepareResources: %s", msg)
	}
	if _, err := os.Stat(specPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CDI spec after unprepare: %v, want it gone", err)
	}
	poll.Until(t, waitLimit, "the claim's directory released", func() error {
		if _, err := os.Stat(memif.HostDir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %v", memif.HostDir, err)
		}
		if list := n.dm.ListAllocations(); len(list) != 0 {
			return fmt.Errorf("still held: %v", list)
		}
		return nil
	})
	if msg := n.unprepare(t, claimUID, claimName); msg != "" {
		t.Errorf("unpreparing a released claim: %s, want success", msg)
	}
}

// TestRestartSyncsClaimsWithTheAPIServer: while the driver is down, one
// prepared claim is deleted, another loses its pod, and a third, prepared
// before the scheduler reserved it, gets its pod; the driver's start
// releases the first two (directory, device, CDI spec) and binds the third.
// It reads each claim the node holds by name and lists none.
func TestRestartSyncsClaimsWithTheAPIServer(t *testing.T) {
	n := startNode(t)
	const (
		deletedUID    = "11111111-1b2c-4d5e-8f90-0123456789ab"
		unreservedUID = "22222222-1b2c-4d5e-8f90-0123456789ab"
		unboundUID    = "33333333-1b2c-4d5e-8f90-0123456789ab"
	)
	n.allocate(t, deletedUID, "deleted", "memif-dra-000")
	n.allocate(t, unreservedUID, "unreserved", "memif-dra-001")
	unbound := n.allocate(t, unboundUID, "unbound", "memif-dra-002")
	unbound.Status.ReservedFor = nil
	if _, err := n.apiServer.ResourceV1().ResourceClaims(claimNS).UpdateStatus(context.Background(), unbound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for uid, name := range map[string]string{deletedUID: "deleted", unreservedUID: "unreserved", unboundUID: "unbound"} {
		prepared := n.prepare(t, uid, name)
		if prepared.GetError() != "" {
			t.Fatalf("prepare %s: %s", name, prepared.GetError())
		}
		for _, memif := range n.dm.ListAllocations() {
			if memif.DeviceIDs[0] == prepared.Devices[0].DeviceName {
				dirs[uid] = memif.HostDir
			}
		}
	}
	if _, err := n.dm.GetPodMemifInfo(podapi.PodID{Namespace: claimNS, Name: "other"}); err == nil {
		t.Fatal("a claim prepared without a reservation is bound")
	}

	n.driver.Stop()
	ctx := context.Background()
	claimsAPI := n.apiServer.ResourceV1().ResourceClaims(claimNS)
	if err := claimsAPI.Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	unreserved, err := claimsAPI.Get(ctx, "unreserved", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unreserved.Status.ReservedFor = nil
	if _, err := claimsAPI.UpdateStatus(ctx, unreserved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	unbound.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "other", UID: "other-uid"}}
	if _, err := claimsAPI.UpdateStatus(ctx, unbound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.apiServer.ClearActions()
	n.startDriver(t)
	if listedClaims(n.apiServer) {
		t.Error("the driver listed ResourceClaims at start; want each of its claims read by name")
	}

	for _, uid := range []string{deletedUID, unreservedUID} {
		if _, err := os.Stat(filepath.Join(n.cfg.CDIDir, claims.CDISpecName(uid))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("CDI spec of released claim %s: %v, want it gone", uid, err)
		}
		poll.Until(t, waitLimit, uid+"'s directory released", func() error {
			if _, err := os.Stat(dirs[uid]); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s: %v", dirs[uid], err)
			}
			return nil
		})
	}
	memif, err := n.dm.GetPodMemifInfo(podapi.PodID{Namespace: claimNS, Name: "other"})
	if err != nil || memif.HostDir != dirs[unboundUID] || memif.PodUID != "other-uid" {
		t.Errorf("GetPodMemifInfo of the pod the claim is now reserved for = %v, %v; want %s", memif, err, dirs[unboundUID])
	}
	if list := n.dm.ListAllocations(); len(list) != 1 {
		t.Errorf("the node holds %v, want the reserved claim's allocation alone", list)
	}
	n.allocate(t, "44444444-1b2c-4d5e-8f90-0123456789ab", "next", "memif-dra-000")
	if prepared := n.prepare(t, "44444444-1b2c-4d5e-8f90-0123456789ab", "next"); prepared.GetError() != "" {
		t.Errorf("a new claim on a released device: %s, want it prepared", prepared.GetError())
	}
}

// TestPrepareTakesBackADeviceOfAGoneClaim: a claim whose pod went while
// the agent was down is never unprepared by kubelet. When the scheduler
// gives its device to a new claim, the prepare finds the holder gone from
// the API server, releases it and prepares the new claim; a holder the API
// server still reserves keeps its device.
func TestPrepareTakesBackADeviceOfAGoneClaim(t *testing.T) {
	n := startNode(t)
	const (
		goneUID = "11111111-1b2c-4d5e-8f90-0123456789ab"
		liveUID = "22222222-1b2c-4d5e-8f90-0123456789ab"
		nextUID = "33333333-1b2c-4d5e-8f90-0123456789ab"
		lateUID = "44444444-1b2c-4d5e-8f90-0123456789ab"
	)
	n.allocate(t, goneUID, "gone", "memif-dra-000")
	n.allocateWith(t, liveUID, "live", func(claim *resourceapi.ResourceClaim) {
		claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "running", UID: "running-uid"}}
	}, "memif-dra-001")
	for uid, name := range map[string]string{goneUID: "gone", liveUID: "live"} {
		if prepared := n.prepare(t, uid, name); prepared.GetError() != "" {
			t.Fatalf("prepare %s: %s", name, prepared.GetError())
		}
	}
	if err := n.apiServer.ResourceV1().ResourceClaims(claimNS).Delete(context.Background(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	n.allocate(t, nextUID, "next", "memif-dra-000")
	if prepared := n.prepare(t, nextUID, "next"); prepared.GetError() != "" {
		t.Errorf("a new claim on the device of a claim gone from the API server: %s, want it prepared", prepared.GetError())
	}
	n.allocate(t, lateUID, "late", "memif-dra-001")
	if prepared := n.prepare(t, lateUID, "late"); !strings.Contains(prepared.GetError(), "already held") {
		t.Errorf("a new claim on the device of a claim the API server still reserves: %q, want it refused as held", prepared.GetError())
	}
	refs, err := n.cfg.Claims.PreparedClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, ref := range refs {
		held = append(held, ref.Name)
	}
	if want := []string{"live", "next"}; !slices.Equal(held, want) {
		t.Errorf("the node holds claims %v, want %v", held, want)
	}
}

// namelessClaims stands in for a device manager whose checkpoint, written
// by an agent that kept no claim names, names none of its claims.
type namelessClaims struct{ dmapi.ClaimPreparer }

func (s namelessClaims) PreparedClaims(ctx context.Context) ([]dmapi.ClaimRef, error) {
	refs, err := s.ClaimPreparer.PreparedClaims(ctx)
	for i := range refs {
		refs[i].Namespace, refs[i].Name = "", ""
	}
	return refs, err
}

// TestRestartKeepsClaimsItCannotRead: a claim an older agent's checkpoint
// holds without its name is kept, even deleted from the API server, and
// no claim is listed to find it: kubelet unprepares it when its pod goes.
func TestRestartKeepsClaimsItCannotRead(t *testing.T) {
	n := startNode(t)
	n.allocate(t, claimUID, claimName, "memif-dra-000")
	if prepared := n.prepare(t, claimUID, claimName); prepared.GetError() != "" {
		t.Fatal(prepared.GetError())
	}
	n.driver.Stop()
	if err := n.apiServer.ResourceV1().ResourceClaims(claimNS).Delete(context.Background(), claimName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n.apiServer.ClearActions()
	n.cfg.Claims = namelessClaims{n.dm.ClaimPreparer(n.loop)}
	n.startDriver(t)
	if listedClaims(n.apiServer) {
		t.Error("the driver listed ResourceClaims at start")
	}
	if held := n.dm.ListAllocations(); len(held) != 1 {
		t.Errorf("the node holds %v, want the claim it cannot read kept", held)
	}
	if _, err := os.Stat(filepath.Join(n.cfg.CDIDir, claims.CDISpecName(claimUID))); err != nil {
		t.Errorf("CDI spec of the kept claim: %v", err)
	}
}

// listedClaims tells whether a list of ResourceClaims reached apiServer.
func listedClaims(apiServer *fakeapiserver.Clientset) bool {
	for _, action := range apiServer.Actions() {
		if action.GetVerb() == "list" && action.GetResource().Resource == "resourceclaims" {
			return true
		}
	}
	return false
}

func TestPrepareRefusesWhatTheNodeCannotGive(t *testing.T) {
	n := startNode(t)
	n.allocate(t, claimUID, claimName, "memif-dra-000")
	if prepared := n.prepare(t, claimUID, claimName); prepared.GetError() != "" {
		t.Fatal(prepared.GetError())
	}
	cases := []struct {
		name, uid, device, want string
	}{
		{"device held by another claim", "11111111-1b2c-4d5e-8f90-0123456789ab", "memif-dra-000", "already held"},
		{"device this node does not have", "22222222-1b2c-4d5e-8f90-0123456789ab", "memif-dra-999", "not devices of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n.allocate(t, tc.uid, "claim-"+tc.uid[:8], tc.device)
			prepared := n.prepare(t, tc.uid, "claim-"+tc.uid[:8])
			if !strings.Contains(prepared.GetError(), tc.want) {
				t.Errorf("prepare = %v, want an error saying %q", prepared, tc.want)
			}
			if _, err := os.Stat(filepath.Join(n.cfg.CDIDir, claims.CDISpecName(tc.uid))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused claim has a CDI spec: %v", err)
			}
		})
	}
	if list := n.dm.ListAllocations(); len(list) != 1 {
		t.Errorf("after the refusals the node holds %v, want the first claim's only", list)
	}
}

func TestSlicesPublishedWithoutSecrets(t *testing.T) {
	n := startNode(t)
	var slice resourceapi.ResourceSlice
	poll.Until(t, waitLimit, "this node's ResourceSlice", func() error {
		list, err := n.apiServer.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return fmt.Errorf("slices %v, %v", list, err)
		}
		slice = list.Items[0]
		return nil
	})
	var names []string
	for _, device := range slice.Spec.Devices {
		names = append(names, device.Name)
	}
	if slice.Spec.Driver != claims.DefaultDriverName || slice.Spec.Pool.Name != nodeName || slice.Spec.NodeName == nil || *slice.Spec.NodeName != nodeName ||
		!slices.Equal(names, n.dm.ClaimPool().Devices) || len(names) != devicemanagertest.ClaimDeviceCount || slice.Spec.Pool.ResourceSliceCount != 1 {
		t.Errorf("slice = %+v, want %s's %d devices of %s", slice.Spec, nodeName, devicemanagertest.ClaimDeviceCount, claims.DefaultDriverName)
	}
	n.allocate(t, claimUID, claimName, "memif-dra-002")
	n.prepare(t, claimUID, claimName)
	secret := n.dm.ListAllocations()[0].Secret
	slicesNow, _ := n.apiServer.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
	claimNow, _ := n.apiServer.ResourceV1().ResourceClaims(claimNS).Get(context.Background(), claimName, metav1.GetOptions{})
	events, _ := n.apiServer.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	for what, object := range map[string]any{"slices": slicesNow, "claim": claimNow, "events": events} {
		encoded, _ := json.Marshal(object)
		if strings.Contains(string(encoded), secret) {
			t.Errorf("the secret is in the API server's %s", what)
		}
	}
}

func TestRegistersWithKubelet(t *testing.T) {
	n := startNode(t)
	conn, err := grpc.NewClient("unix://"+n.registrarIn, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	info, err := registerapi.NewRegistrationClient(conn).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil || info.Type != registerapi.DRAPlugin || info.Name != claims.DefaultDriverName || info.Endpoint != n.driver.PluginSocket() {
		t.Errorf("GetInfo = %v, %v; want a DRA plugin %s at %s", info, err, claims.DefaultDriverName, n.driver.PluginSocket())
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != want {
		t.Errorf("%s: %v, %v; want mode %#o", path, info, err, want)
	}
}

// inject applies a CDI device to a container spec with the CDI library, as
// containerd does, and returns the container's env and mounts.
func inject(t *testing.T, dir, id string) ([]string, []oci.Mount) {
	t.Helper()
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		t.Fatal(err)
	}
	spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
	if unresolved, err := cache.InjectDevices(spec, id); err != nil {
		t.Fatalf("inject %s = %v, %v", id, unresolved, err)
	}
	return spec.Process.Env, spec.Mounts
}

// kubelet deletes the slices of a driver it registered when the driver
// goes; a driver it never registered withdraws them itself at Stop.
func TestStopWithdrawsSlices(t *testing.T) {
	for _, tc := range []struct {
		name       string
		notify     *registerapi.RegistrationStatus
		wantSlices int
	}{
		{"ok", &registerapi.RegistrationStatus{PluginRegistered: true}, 1},
		{"refused", &registerapi.RegistrationStatus{PluginRegistered: false, Error: "unsupported version"}, 0},
		{"never", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t)
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			nodeSlices := func() int {
				list, err := n.apiServer.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return len(list.Items)
			}
			poll.Until(t, waitLimit, "this node's ResourceSlice", func() error {
				if got := nodeSlices(); got != 1 {
					return fmt.Errorf("%d slices", got)
				}
				return nil
			})
			if tc.notify != nil {
				conn, err := grpc.NewClient("unix://"+n.registrarIn, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				_, err = registerapi.NewRegistrationClient(conn).NotifyRegistrationStatus(ctx, tc.notify)
				if (err == nil) != tc.notify.PluginRegistered {
					t.Fatalf("NotifyRegistrationStatus(%v) = %v", tc.notify, err)
				}
			}
			if got, want := n.driver.Registered(), tc.notify.GetPluginRegistered(); got != want {
				t.Errorf("Registered() = %v, want %v", got, want)
			}
			n.driver.Stop()
			if got := nodeSlices(); got != tc.wantSlices {
				t.Errorf("after Stop the node has %d slices, want %d", got, tc.wantSlices)
			}
		})
	}
}

// TestSpecsResolveInAWatchingRuntimeCache: the runtime's CDI cache, set up
// as containerd 2.x sets it up (auto-refresh: it rescans only on the
// events of its watch), resolves every device the driver hands kubelet:
// the first prepare, one after the driver restarts, and one after the CDI
// directory was removed under the running driver.
func TestSpecsResolveInAWatchingRuntimeCache(t *testing.T) {
	n := startNode(t)
	restartDriver := func(*testing.T) {
		n.driver.Stop()
		n.startDriver(t) // the test's, not the case's: the driver serves the cases after it
	}
	runtime, err := cdi.NewCache(cdi.WithSpecDirs(n.cfg.CDIDir), cdi.WithAutoRefresh(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runtime.Configure(cdi.WithAutoRefresh(false)) })
	cases := []struct {
		name, uid, device string
		before            func(t *testing.T)
	}{
		{"first prepare", "a1111111-1b2c-4d5e-8f90-0123456789ab", "memif-dra-001", func(*testing.T) {}},
		{"after the driver restarts", "a2222222-1b2c-4d5e-8f90-0123456789ab", "memif-dra-002", restartDriver},
		{"after the directory was removed", "a3333333-1b2c-4d5e-8f90-0123456789ab", "memif-dra-003", func(t *testing.T) {
			if err := os.RemoveAll(n.cfg.CDIDir); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.before(t)
			claimName := "claim-" + c.device
			n.allocate(t, c.uid, claimName, c.device)
			prepared := n.prepare(t, c.uid, claimName)
			if prepared.GetError() != "" {
				t.Fatalf("NodePrepareResources: %s", prepared.GetError())
			}
			id := claims.CDIDeviceID(c.uid, requestName)
			poll.Until(t, waitLimit, "the runtime's cache resolving "+id, func() error {
				spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
				if unresolved, err := runtime.InjectDevices(spec, id); err != nil {
					return fmt.Errorf("%v: %w", unresolved, err)
				}
				return nil
			})
			assertMode(t, n.cfg.CDIDir, 0o700)
		})
	}
}

// TestPrepareRefusesDeletedCDIDir: the agent in a pod holds
// the host's CDI directory mounted; deleted on the host, it still opens,
// but the runtime reads the host's path and sees nothing written there.
// kubelet gets an error that says so instead of a device the runtime
// cannot resolve. A process's working directory stands in for the mount:
// /proc/PID/cwd keeps a deleted directory reachable the same way.
func TestPrepareRefusesDeletedCDIDir(t *testing.T) {
	n := startNode(t)
	held := filepath.Join(t.TempDir(), "cdi")
	if err := os.Mkdir(held, 0o700); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sleep", "60")
	holder.Dir = held
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	n.driver.Stop()
	n.cfg.CDIDir = fmt.Sprintf("/proc/%d/cwd", holder.Process.Pid)
	n.startDriver(t)
	if err := os.Remove(held); err != nil {
		t.Fatal(err)
	}

	n.allocate(t, claimUID, claimName, "memif-dra-001")
	prepared := n.prepare(t, claimUID, claimName)
	if msg := prepared.GetError(); !strings.Contains(msg, "deleted on the host") || !strings.Contains(msg, "restart the agent's pod") {
		t.Errorf("NodePrepareResources error %q, want one saying the CDI directory was deleted and the agent's pod needs a restart", msg)
	}
	if len(prepared.GetDevices()) != 0 {
		t.Errorf("NodePrepareResources handed kubelet %v, which the runtime cannot resolve", prepared.GetDevices())
	}
}
