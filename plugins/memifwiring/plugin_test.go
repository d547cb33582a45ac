package memifwiring_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/controller"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/plugins/health"
	"github.com/contivpp/memif-agent/plugins/memifwiring"
	"github.com/contivpp/memif-agent/plugins/networks"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/vswitch"
	"github.com/contivpp/memif-agent/test/kit/fakepodtracker"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// waitLimit only bounds a wait for something that should happen; no test
// asserts how long anything takes.
const waitLimit = 20 * time.Second

// failingSibling is another handler of pod events that fails while armed.
type failingSibling struct{ armed bool }

var errSiblingFailed = errors.New("sibling handler failed")

func (h *failingSibling) String() string                        { return "failing-sibling" }
func (h *failingSibling) HandlesEvent(controllerapi.Event) bool { return true }
func (h *failingSibling) Revert(controllerapi.Event) error      { return nil }
func (h *failingSibling) Update(controllerapi.Event, controllerapi.EventOperations) (string, error) {
	if h.armed {
		return "", errSiblingFailed
	}
	return "", nil
}
func (h *failingSibling) Resync(controllerapi.Event, controllerapi.EventOperations) error {
	return nil
}

// testAgent is the real controller, KV scheduler, device manager and memif
// wiring in-process, with a real VPP behind the vswitch plugin or the
// vswitch stand-in.
type testAgent struct {
	controller *controller.Plugin
	scheduler  *kvscheduler.Scheduler
	devices    *manager.Manager
	// vswitch is the stand-in, nil with a real VPP.
	vswitch *vswitchStandIn
	// vswitchPlugin is the plugin programming a real VPP, nil with the
	// stand-in.
	vswitchPlugin *vswitch.Plugin
	// vppDeletes records the deletions VPP was told of, nil with the
	// stand-in.
	vppDeletes *recordingScheduler
	sibling    *failingSibling
	// networks is the networks plugin, nil without networks.conf.
	networks *networks.Plugin
	// restURL is where cn-infra's REST plugin serves the scheduler's API.
	restURL string
	// stop stops the agent; it is safe to call more than once.
	stop func()
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// agentSetup is what a test agent is made of besides its real parts.
type agentSetup struct {
	// dir holds the agent's config, checkpoint and socket root; empty: a
	// fresh temp dir. Two agents on one dir are one agent restarted.
	dir string
	// wiringConf is memifwiring.conf; empty: MTU 9000, polling.
	wiringConf string
	// managerOptions set the device manager's optional collaborators.
	managerOptions []func(*manager.Options)
	// vswitch is the vswitch plugin's config (a real VPP's API socket);
	// empty: the stand-in.
	vswitchConf string
	// vswitchLog receives the vswitch plugin's log.
	vswitchLog io.Writer
	// health gets the vswitch plugin's state.
	health *health.Plugin
	// networksConf is networks.conf; empty: no networks plugin.
	networksConf string
	// claimDevices is the device manager's claim-device-count.
	claimDevices int
	// devices is the device manager's device-count; 0: 8.
	devices int
	// startLimit bounds the wait for the startup resync; 0: waitLimit.
	startLimit time.Duration
	// span tells how the networks span nodes; nil: they end at the node.
	span crossnodeapi.SpanSource
}

// startAgent starts the agent with the vswitch stand-in; options set the
// device manager's optional collaborators.
func startAgent(t testing.TB, options ...func(*manager.Options)) *testAgent {
	t.Helper()
	return startAgentWith(t, agentSetup{managerOptions: options})
}

func startAgentWith(t testing.TB, setup agentSetup) *testAgent {
	t.Helper()
	dir := setup.dir
	if dir == "" {
		dir = t.TempDir()
	}
	a := &testAgent{sibling: &failingSibling{}}
	restPlugin, restURL := newREST(t)
	a.restURL = restURL
	// The scheduler's transaction summary prints values, memif secrets
	// included; the agent turns it off the same way.
	schedulerConf := writeFile(t, dir, "kvscheduler.conf", "print-txn-summary: false\n")
	a.scheduler = kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) {
		deps.HTTPHandlers = restPlugin
		deps.Cfg = configfile.File(schedulerConf)
	}))
	if err := a.scheduler.Init(); err != nil {
		t.Fatalf("scheduler Init: %v", err)
	}
	if err := restPlugin.AfterInit(); err != nil {
		t.Fatalf("REST AfterInit: %v", err)
	}
	if setup.vswitchConf == "" {
		a.vswitch = newVswitchStandIn()
		if err := a.scheduler.RegisterKVDescriptor(a.vswitch.descriptor()); err != nil {
			t.Fatal(err)
		}
	}

	dmCfg := dmconfig.Default()
	dmCfg.DeviceCount = cmp.Or(setup.devices, 8)
	dmCfg.ClaimDeviceCount = setup.claimDevices
	dmCfg.PluginDir = filepath.Join(dir, "device-plugins")
	dmCfg.SocketRoot = filepath.Join(dir, "memif")
	dmCfg.CheckpointPath = filepath.Join(dir, "state", "checkpoint.json")
	dmOptions := manager.Options{Log: testlog.New(t)}
	for _, set := range setup.managerOptions {
		set(&dmOptions)
	}
	devices, err := manager.New(dmCfg, dmOptions)
	if err != nil {
		t.Fatal(err)
	}
	a.devices = devices

	wiringConf := setup.wiringConf
	if wiringConf == "" {
		wiringConf = "mtu: 9000\nrx-mode: polling\n"
	}
	var networksPlugin *networks.Plugin
	if setup.networksConf != "" {
		networksPlugin = networks.NewPlugin(networks.UseDeps(func(deps *networks.Deps) {
			deps.Cfg = configfile.File(writeFile(t, dir, "networks.conf", setup.networksConf))
		}))
		a.networks = networksPlugin
	}
	wiring := memifwiring.NewPlugin(memifwiring.UseDeps(func(deps *memifwiring.Deps) {
		deps.DeviceManager = devices
		deps.Cfg = configfile.File(writeFile(t, dir, "memifwiring.conf", wiringConf))
		if networksPlugin != nil {
			deps.Networks = networksPlugin
		}
		deps.Span = setup.span
	}))
	controllerConf := writeFile(t, dir, "controller.conf", "healing-delay: 10ms\nhealing-max-delay: 100ms\n")
	a.controller = controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
		deps.KVScheduler = a.scheduler
		deps.Cfg = configfile.File(controllerConf)
		deps.EventHandlers = []controllerapi.EventHandler{a.sibling, devices, wiring}
	}))
	if tracker, ok := dmOptions.LivePods.(*fakepodtracker.Tracker); ok {
		tracker.Attach(a.controller)
	}
	type step struct {
		name string
		run  func() error
	}
	var vswitchPlugin *vswitch.Plugin
	// The agent's order: the controller first (the vswitch plugin pushes
	// into its loop), then the vswitch plugin, whose Init registers the
	// descriptors and connects to VPP, all before the startup resync.
	steps := []step{{"memifwiring Init", wiring.Init}, {"controller Init", a.controller.Init}}
	if networksPlugin != nil {
		networksPlugin.EventLoop = a.controller
		networksPlugin.Legacy = wiring.LegacyNetworks
		steps = append([]step{{"networks Init", networksPlugin.Init}}, steps...)
	}
	if setup.vswitchConf != "" {
		vswitchPlugin = newVswitchPlugin(t, a, dir, setup)
		a.vswitchPlugin = vswitchPlugin
		steps = append(steps, step{"vswitch Init", vswitchPlugin.Init})
	}
	steps = append(steps, step{"controller AfterInit", a.controller.AfterInit})
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			if networksPlugin != nil {
				networksPlugin.Close()
			}
			a.controller.Close()
			if vswitchPlugin != nil {
				vswitchPlugin.Close()
			}
			a.scheduler.Close()
		})
	}
	t.Cleanup(a.stop)
	for _, step := range steps {
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	a.barrierWithin(t, cmp.Or(setup.startLimit, waitLimit))
	return a
}

// barrier is a blocking event no handler wants: once it is done, every
// event pushed before it has been processed.
type barrier struct{ *controllerapi.Result }

func (barrier) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "TestBarrier", Blocking: true, Transaction: controllerapi.BestEffortIgnoreErrors}
}
func (barrier) String() string { return "test barrier" }

func (a *testAgent) push(t testing.TB, event controllerapi.Event) {
	t.Helper()
	if err := a.controller.PushEvent(event); err != nil {
		t.Fatalf("push %s: %v", event, err)
	}
}

func (a *testAgent) barrier(t testing.TB) {
	t.Helper()
	a.barrierWithin(t, waitLimit)
}

// barrierWithin is barrier, waiting at most limit.
func (a *testAgent) barrierWithin(t testing.TB, limit time.Duration) {
	t.Helper()
	event := barrier{controllerapi.NewResult()}
	a.push(t, event)
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	if err := event.Wait(ctx); err != nil {
		t.Fatalf("wait for the events before the barrier: %v", err)
	}
}

// allocate does what kubelet's Allocate does for one container.
func (a *testAgent) allocate(t testing.TB, deviceIDs ...string) *dmapi.AllocateDevice {
	t.Helper()
	event := dmapi.NewAllocateDevice(dmapi.DefaultResourceName, deviceIDs)
	a.push(t, event)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := event.Wait(ctx); err != nil {
		t.Fatalf("allocate %v: %v", deviceIDs, err)
	}
	return event
}

// container is what the runtime shows of a container that got allocation.
func container(name string, allocation *dmapi.AllocateDevice) podapi.PodContainer {
	return podapi.PodContainer{Name: name, Annotations: allocation.Annotations}
}

// schedulerInterfaces is the KV scheduler's view of the vpp interfaces.
func (a *testAgent) schedulerInterfaces(t testing.TB) map[string]*vpp_interfaces.Interface {
	t.Helper()
	values, err := a.scheduler.DumpValuesByKeyPrefix(vpp_interfaces.ModelInterface.KeyPrefix(), kvs.CachedView)
	if err != nil {
		t.Fatalf("dump scheduler: %v", err)
	}
	interfaces := map[string]*vpp_interfaces.Interface{}
	for _, kv := range values {
		iface := kv.Value.(*vpp_interfaces.Interface)
		interfaces[iface.Name] = iface
	}
	return interfaces
}

func names(interfaces map[string]*vpp_interfaces.Interface) []string {
	return slices.Sorted(maps.Keys(interfaces))
}

// withoutSecret keeps secrets out of test logs.
func withoutSecret(iface *vpp_interfaces.Interface) *vpp_interfaces.Interface {
	masked := proto.Clone(iface).(*vpp_interfaces.Interface)
	if link := masked.GetMemif(); link != nil && link.Secret != "" {
		link.Secret = "***"
	}
	return masked
}

func (a *testAgent) addWebPod(t testing.TB) (podapi.Pod, *dmapi.AllocateDevice, *dmapi.AllocateDevice) {
	t.Helper()
	app := a.allocate(t, "memif-000")
	sidecar := a.allocate(t, "memif-001")
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web"}
	a.push(t, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{container("app", app), container("sidecar", sidecar)}})
	a.barrier(t)
	return pod, app, sidecar
}

const (
	appInterface     = "memif_default_web_app_0"
	sidecarInterface = "memif_default_web_sidecar_0"
)

var webInterfaces = []string{appInterface, sidecarInterface}

func TestPodMemifsAreWiredThenRemoved(t *testing.T) {
	a := startAgent(t)
	pod, app, sidecar := a.addWebPod(t)
	a.push(t, &podapi.AddPod{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "no-memif"}, UID: "uid-2"}})
	a.barrier(t)

	interfaces := a.restDumpInterfaces(t)
	for _, tc := range []struct {
		name       string
		allocation *dmapi.AllocateDevice
	}{
		{appInterface, app},
		{sidecarInterface, sidecar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iface := interfaces[tc.name]
			link := iface.GetMemif()
			wantSocket := tc.allocation.Annotations[dmapi.AnnotationSocketHost]
			wantSecret := tc.allocation.Envs[dmapi.EnvMemifSecret]
			if iface.GetType() != vpp_interfaces.Interface_MEMIF || !iface.GetEnabled() || !link.GetMaster() ||
				link.GetSocketFilename() != wantSocket || link.GetSecret() != wantSecret || link.GetId() != 0 {
				t.Errorf("scheduler holds %v (secret matches: %v), want an enabled memif master on %s with the allocation's secret",
					withoutSecret(iface), link.GetSecret() == wantSecret, wantSocket)
			}
			if iface.GetMtu() != 9000 {
				t.Errorf("MTU = %d, want 9000 from memifwiring.conf", iface.GetMtu())
			}
			if state := a.scheduler.GetValueStatus(vpp_interfaces.InterfaceKey(tc.name)).GetValue().GetState(); state != kvs.ValueState_CONFIGURED {
				t.Errorf("scheduler state = %s, want CONFIGURED", state)
			}
			if got := a.vswitch.get(tc.name); got.GetMemif().GetSocketFilename() != wantSocket {
				t.Errorf("vswitch was told %v, want the memif on %s", withoutSecret(got), wantSocket)
			}
		})
	}
	if len(interfaces) != 2 {
		t.Errorf("scheduler holds %v, want the web pod's 2 interfaces", names(interfaces))
	}

	a.push(t, &podapi.DeletePod{Pod: pod})
	a.barrier(t)
	if interfaces := a.restDumpInterfaces(t); len(interfaces) != 0 {
		t.Errorf("after DeletePod the scheduler holds %v, want nothing", names(interfaces))
	}
	if names := a.vswitch.names(); len(names) != 0 {
		t.Errorf("after DeletePod the vswitch holds %v, want nothing", names)
	}
	if allocations := a.devices.ListAllocations(); len(allocations) != 0 {
		t.Errorf("after DeletePod the device manager holds %v, want the allocations released", allocations)
	}
}

// revertOnFailureDeletePod is a DeletePod that the controller processes
// under RevertOnFailure and that its pusher waits for.
type revertOnFailureDeletePod struct {
	*podapi.DeletePod
	result *controllerapi.Result
}

func (e revertOnFailureDeletePod) Spec() controllerapi.EventSpec {
	spec := e.DeletePod.Spec()
	spec.Blocking, spec.Transaction = true, controllerapi.RevertOnFailure
	return spec
}
func (e revertOnFailureDeletePod) Done(err error) { e.result.Done(err) }

func TestHandlerFailureUnderRevertOnFailureLeavesSchedulerUnchanged(t *testing.T) {
	a := startAgent(t)
	pod, _, _ := a.addWebPod(t)
	before := a.schedulerInterfaces(t)

	a.sibling.armed = true
	event := revertOnFailureDeletePod{DeletePod: &podapi.DeletePod{Pod: pod}, result: controllerapi.NewResult()}
	a.push(t, event)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := event.result.Wait(ctx); !errors.Is(err, errSiblingFailed) {
		t.Fatalf("event error = %v, want the sibling's failure", err)
	}
	after := a.schedulerInterfaces(t)
	if len(after) != len(before) || after[appInterface] == nil || after[sidecarInterface] == nil {
		t.Errorf("after the reverted event the scheduler holds %v, want it unchanged: %v", names(after), names(before))
	}
	if names := a.vswitch.names(); !slices.Equal(names, webInterfaces) {
		t.Errorf("after the reverted event the vswitch holds %v, want %v", names, webInterfaces)
	}

	// The handler's own record was reverted too: a real DeletePod still
	// knows what to remove.
	a.sibling.armed = false
	a.push(t, &podapi.DeletePod{Pod: pod})
	a.barrier(t)
	if interfaces := a.schedulerInterfaces(t); len(interfaces) != 0 {
		t.Errorf("after DeletePod the scheduler holds %v, want nothing", names(interfaces))
	}
}

func TestVswitchFailureKeepsAllocationAndHeals(t *testing.T) {
	a := startAgent(t)
	a.vswitch.refuse(true)
	pod, _, _ := a.addWebPod(t)

	if names := a.vswitch.names(); len(names) != 0 {
		t.Fatalf("the refusing vswitch holds %v", names)
	}
	memifs, err := a.devices.GetPodMemifs(pod.ID)
	if err != nil || len(memifs) != 2 {
		t.Fatalf("after the vswitch failed the pod's memifs are %v (%v), want both allocations kept", memifs, err)
	}

	a.vswitch.refuse(false)
	poll.Until(t, waitLimit, "the healing resync wiring the pod", func() error {
		if names := a.vswitch.names(); !slices.Equal(names, webInterfaces) {
			return fmt.Errorf("vswitch holds %v, want %v", names, webInterfaces)
		}
		return nil
	})
}

func TestResyncRewiresFromTheDeviceManager(t *testing.T) {
	a := startAgent(t)
	a.addWebPod(t)
	resync := eventloop.NewResyncEvent(eventloop.RequestedResyncName)
	a.push(t, resync)
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := resync.Wait(ctx); err != nil {
		t.Fatalf("resync: %v", err)
	}
	interfaces := a.schedulerInterfaces(t)
	if len(interfaces) != 2 || interfaces[appInterface] == nil || interfaces[sidecarInterface] == nil {
		t.Errorf("after a full resync the scheduler holds %v, want the web pod's interfaces", names(interfaces))
	}
}
