package memifwiring_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/ligato/cn-infra/health/statuscheck/model/status"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/vswitch"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/syncbuffer"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// recordingScheduler is the real KV scheduler; it wraps the memif
// descriptor's Delete to record whether the interface's socket directory
// was still there when VPP was told to delete it.
type recordingScheduler struct {
	kvs.KVScheduler
	mu      sync.Mutex
	deletes []deletion
}

func (s *recordingScheduler) RegisterKVDescriptor(descriptors ...*kvs.KVDescriptor) error {
	for _, d := range descriptors {
		if d.Name != descriptor.InterfaceDescriptorName {
			continue
		}
		deleteInVPP := d.Delete
		d.Delete = func(key string, value proto.Message, metadata kvs.Metadata) error {
			iface := value.(*vpp_interfaces.Interface)
			_, statErr := os.Stat(filepath.Dir(iface.GetMemif().GetSocketFilename()))
			s.mu.Lock()
			s.deletes = append(s.deletes, deletion{name: iface.Name, socketDirPresent: statErr == nil})
			s.mu.Unlock()
			return deleteInVPP(key, value, metadata)
		}
	}
	return s.KVScheduler.RegisterKVDescriptor(descriptors...)
}

func (s *recordingScheduler) deletions() []deletion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deletes)
}

// vppWaitLimit bounds waits on VPP and DPDK, which share two busy cores
// with every other test here; a failure deadline only.
const vppWaitLimit = 60 * time.Second

// vppAgent is a test agent whose vswitch plugin programs a real VPP.
type vppAgent struct {
	*testAgent
	vpp *vpp.VPP
	// log is the vswitch plugin's.
	log *syncbuffer.Buffer
}

// vppAgentDir is a short state dir: VPP's socket paths hold 108 bytes.
func vppAgentDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func startVPPAgent(t testing.TB, v *vpp.VPP, dir string, lister *livePods, wiringConf string) *vppAgent {
	t.Helper()
	return startVPPAgentWith(t, v, dir, lister, wiringConf, "")
}

// startVPPAgentWith starts the agent with networks.conf too (empty: its
// defaults).
func startVPPAgentWith(t testing.TB, v *vpp.VPP, dir string, lister *livePods, wiringConf, networksConf string) *vppAgent {
	t.Helper()
	return startOnVPP(t, v, "link-check-period: 50ms\n", agentSetup{dir: dir, wiringConf: wiringConf, networksConf: networksConf, livePods: lister})
}

// startOnVPP starts the agent setup says on v, with vswitchConf after
// vswitch.conf's vpp-api-socket; the vswitch plugin's log is shown when
// the test fails.
func startOnVPP(t testing.TB, v *vpp.VPP, vswitchConf string, setup agentSetup) *vppAgent {
	t.Helper()
	a := &vppAgent{vpp: v, log: &syncbuffer.Buffer{}}
	setup.vswitchConf = fmt.Sprintf("vpp-api-socket: %s\n%s", v.APISocket, vswitchConf)
	setup.vswitchLog = a.log
	a.testAgent = startAgentWith(t, setup)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vswitch plugin log of the VPP at %s:\n%s", v.APISocket, a.log)
		}
	})
	return a
}

// vppMemif is what VPP reports of one memif of the agent's.
type vppMemif struct {
	index  vppmsg.InterfaceIndex
	socket string
	master bool
	id     uint32
	adminUp,
	linkUp bool
}

// vppMemifs reads VPP's memifs of the agent's by name (their tag after
// owner.Prefix) through a connection of the test's own.
func vppMemifs(t testing.TB, v *vpp.VPP) (map[string]vppMemif, error) {
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "memifwiring-test", 0)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	sockets, err := vppapi.Dump[vppmsg.MemifSocketFilenameDetails](t.Context(), conn, &vppmsg.MemifSocketFilenameDump{})
	if err != nil {
		return nil, err
	}
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](t.Context(), conn, &vppmsg.MemifDump{})
	if err != nil {
		return nil, err
	}
	names, err := vppNames(t, conn)
	if err != nil {
		return nil, err
	}
	socketNames := map[uint32]string{}
	for _, socket := range sockets {
		socketNames[socket.SocketID] = socket.SocketFilename
	}
	result := map[string]vppMemif{}
	for _, memif := range memifs {
		name, ours := names[memif.SwIfIndex]
		if !ours {
			continue
		}
		result[name] = vppMemif{index: memif.SwIfIndex, socket: socketNames[memif.SocketID],
			master: memif.Role == vppmsg.MemifRoleAPIMaster, id: memif.ID,
			adminUp: memif.Flags&vppmsg.IfStatusAPIFlagAdminUp != 0, linkUp: memif.Flags&vppmsg.IfStatusAPIFlagLinkUp != 0}
	}
	return result, nil
}

// vppNames returns the name of every interface of the agent's in VPP by
// index.
func vppNames(t testing.TB, conn *vppapi.Conn) (map[vppmsg.InterfaceIndex]string, error) {
	interfaces, err := vppapi.Dump[vppmsg.SwInterfaceDetails](t.Context(), conn, &vppmsg.SwInterfaceDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if err != nil {
		return nil, err
	}
	names := map[vppmsg.InterfaceIndex]string{}
	for _, iface := range interfaces {
		if name, ours := owner.Name(iface.Tag); ours {
			names[iface.SwIfIndex] = name
		}
	}
	return names, nil
}

// waitVPPMemifs waits until VPP's memifs of the agent's are want (sorted
// names).
func waitVPPMemifs(t testing.TB, v *vpp.VPP, want []string) map[string]vppMemif {
	t.Helper()
	var memifs map[string]vppMemif
	poll.Until(t, vppWaitLimit, fmt.Sprintf("VPP holds memifs %v", want), func() error {
		var err error
		if memifs, err = vppMemifs(t, v); err != nil {
			return err
		}
		if got := slices.Sorted(func(yield func(string) bool) {
			for name := range memifs {
				if !yield(name) {
					return
				}
			}
		}); !slices.Equal(got, want) {
			return fmt.Errorf("VPP holds %v", got)
		}
		return nil
	})
	return memifs
}

// startPodSide runs testpmd as a pod's memif client on the host: on the
// host end of the pod's MEMIF_SOCKET, with its MEMIF_SECRET.
func startPodSide(t testing.TB, socket, secret, mode string) *testpmd.Vswitch {
	t.Helper()
	side, err := testpmd.StartVswitch(t.Context(), testpmd.VswitchConfig{Socket: socket, Secret: secret, Client: true,
		ForwardMode: mode, LogPath: filepath.Join(t.TempDir(), "pod-side.log")})
	if err != nil {
		t.Fatalf("pod side on %s: %v", socket, err)
	}
	t.Cleanup(func() { side.Stop() })
	return side
}

func waitLinkUp(t testing.TB, side *testpmd.Vswitch) error {
	ctx, cancel := context.WithTimeout(t.Context(), vppWaitLimit)
	defer cancel()
	return side.WaitLinkUp(ctx)
}

func TestVPPHoldsEachPodMemifAsMasterOnItsSocketWithItsSecret(t *testing.T) {
	v := vpp.Start(t)
	a := startVPPAgent(t, v, vppAgentDir(t), nil, "")
	pod, app, sidecar := a.addWebPod(t)

	memifs := waitVPPMemifs(t, v, webInterfaces)
	for name, allocation := range map[string]*dmapi.AllocateDevice{appInterface: app, sidecarInterface: sidecar} {
		memif, socket := memifs[name], allocation.Annotations[dmapi.AnnotationSocketHost]
		if !memif.master || memif.socket != socket || memif.id != 0 || !memif.adminUp {
			t.Errorf("VPP holds %s as %+v, want an admin-up master with ID 0 on %s", name, memif, socket)
		}
		if show := v.CLI(t, "show", "memif"); !strings.Contains(show, socket) {
			t.Errorf("show memif lacks %s:\n%s", socket, show)
		}
	}

	// The pod side with its MEMIF_SOCKET and MEMIF_SECRET links up: VPP
	// holds the allocation's secret.
	appSide := startPodSide(t, app.Annotations[dmapi.AnnotationSocketHost], app.Envs[dmapi.EnvMemifSecret], "txonly")
	if err := waitLinkUp(t, appSide); err != nil {
		t.Fatalf("pod side with the allocation's secret: %v", err)
	}
	poll.Until(t, vppWaitLimit, "VPP reports the app memif's link up", func() error {
		memifs, err := vppMemifs(t, v)
		if err == nil && !memifs[appInterface].linkUp {
			err = fmt.Errorf("link down: %+v", memifs[appInterface])
		}
		return err
	})
	poll.Until(t, vppWaitLimit, "the agent reports the app link up", func() error {
		for _, line := range strings.Split(a.log.String(), "\n") {
			if strings.Contains(line, " memif="+appInterface+" ") && strings.Contains(line, `msg="memif link up`) {
				return nil
			}
		}
		return fmt.Errorf("no link-up line for %s", appInterface)
	})

	// A pod side with a wrong secret stays down, and the agent says why.
	startPodSide(t, sidecar.Annotations[dmapi.AnnotationSocketHost], "not-the-secret", "rxonly")
	poll.Until(t, vppWaitLimit, "the agent reports the sidecar's incorrect secret", func() error {
		for _, line := range strings.Split(a.log.String(), "\n") {
			if strings.Contains(line, " memif="+sidecarInterface+" ") && strings.Contains(line, "incorrect secret") {
				return nil
			}
		}
		return fmt.Errorf("no incorrect-secret line for %s", sidecarInterface)
	})
	if memifs, err := vppMemifs(t, v); err != nil || memifs[sidecarInterface].linkUp {
		t.Errorf("sidecar memif with a wrong secret: %+v, %v; want link down", memifs[sidecarInterface], err)
	}
	if strings.Contains(a.log.String(), sidecar.Envs[dmapi.EnvMemifSecret]) {
		t.Error("the vswitch plugin logged a secret")
	}

	// Pod delete: VPP loses interfaces and sockets, each deleted while its
	// directory was still there; then the directories go.
	appSide.Stop()
	a.Push(t, &podapi.DeletePod{Pod: pod})
	a.Barrier(t)
	waitVPPMemifs(t, v, nil)
	if show := v.CLI(t, "show", "memif"); strings.Contains(show, app.Annotations[dmapi.AnnotationSocketHost]) ||
		strings.Contains(show, sidecar.Annotations[dmapi.AnnotationSocketHost]) {
		t.Errorf("VPP still has a pod socket:\n%s", show)
	}
	deletes := a.vppDeletes.deletions()
	if len(deletes) != 2 || !deletes[0].socketDirPresent || !deletes[1].socketDirPresent {
		t.Errorf("VPP was told to delete %+v; want both interfaces, each while its socket directory was there", deletes)
	}
	for _, allocation := range []*dmapi.AllocateDevice{app, sidecar} {
		poll.Until(t, vppWaitLimit, "the allocation's directory is removed", func() error {
			if _, err := os.Stat(filepath.Dir(allocation.Annotations[dmapi.AnnotationSocketHost])); !os.IsNotExist(err) {
				return fmt.Errorf("directory still there (%v)", err)
			}
			return nil
		})
	}
}

// wantNoChanges fails t if a's scheduler changed anything in VPP
// (executedOperations).
func wantNoChanges(t testing.TB, a *vppAgent, what string) {
	t.Helper()
	for _, change := range executedOperations(a.testAgent) {
		t.Errorf("%s: %s", what, change)
	}
}

// addressConf gives the web pod's memifs vswitch-side addresses (one per
// memif ID).
const addressConf = "mtu: 9000\nip-addresses: {default/web/app: [10.10.1.1/24], default/web/sidecar: [\"fd00::1/64\"]}\n"

func TestAgentRestartChangesNothingInVPP(t *testing.T) {
	v := vpp.Start(t)
	dir := vppAgentDir(t)
	lister := newLivePods()
	first := startVPPAgent(t, v, dir, lister, addressConf)
	pod, app, sidecar := first.addWebPod(t)
	lister.set([]podapi.PodState{{Pod: pod, Containers: []podapi.PodContainer{container("app", app), container("sidecar", sidecar)}}})
	before := waitVPPMemifs(t, v, webInterfaces)
	if show := v.CLI(t, "show", "interface", "address"); !strings.Contains(show, "10.10.1.1/24") || !strings.Contains(show, "fd00::1/64") {
		t.Errorf("VPP lacks the web pod's addresses from memifwiring.conf:\n%s", show)
	}
	first.Stop()

	second := startVPPAgent(t, v, dir, lister, addressConf)
	after := waitVPPMemifs(t, v, webInterfaces)
	for name := range before {
		if before[name] != after[name] {
			t.Errorf("VPP's %s was %+v before the restart, %+v after", name, before[name], after[name])
		}
	}
	wantNoChanges(t, second, "restarted agent")
}

func TestVPPRestartGetsEveryInterfaceBack(t *testing.T) {
	v := vpp.Start(t)
	a := startVPPAgent(t, v, vppAgentDir(t), nil, "rx-mode: interrupt\n")
	_, app, _ := a.addWebPod(t)
	waitVPPMemifs(t, v, webInterfaces)

	v.Restart(t)
	memifs := waitVPPMemifs(t, v, webInterfaces)
	if memif := memifs[appInterface]; memif.socket != app.Annotations[dmapi.AnnotationSocketHost] || !memif.master {
		t.Errorf("after the VPP restart VPP holds %+v, want the master on the app's socket", memif)
	}
	appSide := startPodSide(t, app.Annotations[dmapi.AnnotationSocketHost], app.Envs[dmapi.EnvMemifSecret], "txonly")
	if err := waitLinkUp(t, appSide); err != nil {
		t.Fatalf("pod side after the VPP restart: %v", err)
	}
	// The connected memif's queues (only the app's are: a master's queues
	// exist while its peer is connected) take memifwiring.conf's rx mode,
	// where VPP's default is polling.
	poll.Until(t, vppWaitLimit, "the app memif's queue is in interrupt mode", func() error {
		if placement := v.CLI(t, "show", "interface", "rx-placement"); !strings.Contains(placement, "queue 0 (interrupt)") {
			return fmt.Errorf("show interface rx-placement:\n%s", placement)
		}
		return nil
	})
}

func TestVPPDownHoldsNoAllocationBack(t *testing.T) {
	v := vpp.Start(t)
	v.Stop()
	a := startVPPAgent(t, v, vppAgentDir(t), nil, "")

	pod, _, _ := a.addWebPod(t)
	if memifs, err := a.DeviceManager.GetPodMemifs(pod.ID); err != nil || len(memifs) != 2 {
		t.Fatalf("with VPP down the pod's memifs are %v (%v), want both allocations", memifs, err)
	}
	poll.Until(t, vppWaitLimit, "the agent reports the vswitch not ready", func() error {
		if !strings.Contains(a.log.String(), "vswitch not ready") {
			return fmt.Errorf("no vswitch-not-ready line")
		}
		return a.wantVswitchState(status.OperationalState_ERROR, "vswitch not ready")
	})

	v.Restart(t)
	waitVPPMemifs(t, v, webInterfaces)
	poll.Until(t, vppWaitLimit, "the agent reports the vswitch ready", func() error {
		return a.wantVswitchState(status.OperationalState_OK, "")
	})
}

// wantVswitchState checks the vswitch plugin's state in the agent's status
// check, which the readiness probe answers from.
func (a *vppAgent) wantVswitchState(want status.OperationalState, errorPart string) error {
	got := a.Health.GetAllPluginStatus()[vswitch.PluginName]
	if got == nil || got.State != want || !strings.Contains(got.Error, errorPart) {
		return fmt.Errorf("vswitch status %v, want %s with an error containing %q", got, want, errorPart)
	}
	return nil
}

func TestPodToPodThroughVPPBridgeDomain(t *testing.T) {
	v := vpp.Start(t)
	a := startVPPAgent(t, v, vppAgentDir(t), nil, "bridge-domain: pods\n")
	sender, receiver := a.addOneMemifPod(t, "sender", "memif-000"), a.addOneMemifPod(t, "receiver", "memif-001")
	waitVPPMemifs(t, v, []string{"memif_default_receiver_app_0", "memif_default_sender_app_0"})

	rx := startPodSide(t, receiver.Annotations[dmapi.AnnotationSocketHost], receiver.Envs[dmapi.EnvMemifSecret], "rxonly")
	tx := startPodSide(t, sender.Annotations[dmapi.AnnotationSocketHost], sender.Envs[dmapi.EnvMemifSecret], "txonly")
	for _, side := range []*testpmd.Vswitch{rx, tx} {
		if err := waitLinkUp(t, side); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, vppWaitLimit, "the receiving pod counts packets the sending pod sent through VPP", func() error {
		stats, err := rx.Stats(t.Context())
		if err == nil && stats.RxPackets == 0 {
			err = fmt.Errorf("receiver got no packets")
		}
		return err
	})
	if members := bridgeDomainMembers(t, v, "pods"); members != 2 {
		t.Errorf("VPP's bridge domain tagged pods has %d interfaces, want the 2 pod memifs", members)
	}

	// Deleting a pod takes its memif out of the domain, then out of VPP.
	a.Push(t, &podapi.DeletePod{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "sender"}, UID: "uid-sender"}})
	a.Barrier(t)
	waitVPPMemifs(t, v, []string{"memif_default_receiver_app_0"})
	if members := bridgeDomainMembers(t, v, "pods"); members != 1 {
		t.Errorf("after the sender's delete VPP's bridge domain has %d interfaces, want the receiver's", members)
	}
	for _, txn := range a.KVScheduler.GetTransactionHistory(time.Time{}, time.Now()) {
		for _, op := range txn.Executed {
			if op.NewErr != nil {
				t.Errorf("transaction %d (%s): %s %s failed: %v", txn.SeqNum, txn.Description, op.Operation, op.Key, op.NewErr)
			}
		}
	}
}

// bridgeDomainMembers counts the interfaces of the agent's bridge domain
// name in VPP, -1 when there is none.
func bridgeDomainMembers(t testing.TB, v *vpp.VPP, name string) int {
	t.Helper()
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "memifwiring-test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	domains, err := vppapi.Dump[vppmsg.BridgeDomainDetails](t.Context(), conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, domain := range domains {
		if domain.BdTag == owner.Tag(name) {
			return len(domain.SwIfDetails)
		}
	}
	return -1
}

// addOneMemifPod allocates one memif and binds it to pod name's app container.
func (a *vppAgent) addOneMemifPod(t testing.TB, name, device string) *dmapi.AllocateDevice {
	t.Helper()
	allocation := a.allocate(t, device)
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: name}, UID: "uid-" + name}
	a.Push(t, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{container("app", allocation)}})
	a.Barrier(t)
	return allocation
}
