package memifwiring_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gogo/protobuf/jsonpb"
	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/inprocess"
	"github.com/contivpp/memif-agent/plugins/controller"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/dradriver"
	"github.com/contivpp/memif-agent/plugins/memifwiring"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/vswitch"
)

// waitLimit only bounds a wait for something that should happen; no test
// asserts how long anything takes.
const waitLimit = 20 * time.Second

// testAgent is the agent run in the test's process (internal/inprocess),
// with the vswitch stand-in or a real VPP behind its vswitch plugin. Its
// device manager's pod sources are the test's, which pushes AddPod and
// DeletePod itself, and its loop's first handler is one a test arms to
// fail.
type testAgent struct {
	*inprocess.Agent
	// vswitch is the stand-in, nil with a real VPP.
	vswitch *vswitchStandIn
	// vppDeletes records the deletions VPP was told of, nil with the
	// stand-in.
	vppDeletes *recordingScheduler
	sibling    *failingSibling
}

// agentSetup is what a test chooses of its agent; the zero value is the
// vswitch stand-in, memifwiring.conf's MTU 9000 and polling, and no pod
// source.
type agentSetup struct {
	// dir holds the agent's config, state and sockets; empty: a fresh
	// one. Two agents on one dir are one agent restarted.
	dir string
	// wiringConf is memifwiring.conf; empty: MTU 9000, polling.
	wiringConf string
	// networksConf is networks.conf; empty: its defaults.
	networksConf string
	// vswitchConf is vswitch.conf (a real VPP's API socket); empty: the
	// stand-in.
	vswitchConf string
	// vswitchLog receives the vswitch plugin's log.
	vswitchLog io.Writer
	// livePods decides which pods are alive; nil: nothing does.
	livePods *livePods
	// resolver answers for a pod kubelet has just admitted; nil: none.
	resolver podapi.PodResolver
	// deviceManager is devicemanager.conf, paths included
	// (deviceManagerConfig); nil: the harness's, on its kubelet stand-in.
	deviceManager *dmconfig.Config
	// dra is dradriver.conf and draClient its API server; nil: the
	// driver is off.
	dra       *dradriver.Config
	draClient kubernetes.Interface
	// span tells how the networks span nodes; nil: the crossnode
	// plugin's, which ends them at the node.
	span crossnodeapi.SpanSource
}

// startAgent starts the agent with the vswitch stand-in.
func startAgent(t testing.TB) *testAgent {
	t.Helper()
	return startAgentWith(t, agentSetup{})
}

func startAgentWith(t testing.TB, setup agentSetup) *testAgent {
	t.Helper()
	a := &testAgent{sibling: &failingSibling{}}
	opts := inprocess.Options{
		Dir:          setup.dir,
		Configs:      setup.configs(t),
		FirstHandler: a.sibling,
		PodSources:   &inprocess.PodSources{Resolver: setup.resolver},
		VswitchLog:   setup.vswitchLog,
		Span:         setup.span,
		DRAClient:    setup.draClient,
	}
	if setup.livePods != nil {
		opts.PodSources.LivePods = setup.livePods.Tracker
	}
	if setup.vswitchConf == "" {
		a.vswitch = newVswitchStandIn()
		opts.VswitchStandIn = []*kvs.KVDescriptor{a.vswitch.descriptor()}
	} else {
		opts.WrapVswitchScheduler = func(scheduler kvs.KVScheduler) kvs.KVScheduler {
			a.vppDeletes = &recordingScheduler{KVScheduler: scheduler}
			return a.vppDeletes
		}
	}
	a.Agent = inprocess.Start(t, opts)
	return a
}

// configs are the plugins' configs setup gives, each read as the agent
// reads its file.
func (setup agentSetup) configs(t testing.TB) map[string]any {
	t.Helper()
	loop := eventloop.DefaultConfig()
	// A vswitch that failed is healed soon.
	loop.HealingDelay, loop.HealingMaxDelay = configfile.Duration(10*time.Millisecond), configfile.Duration(100*time.Millisecond)
	configs := map[string]any{
		controller.PluginName:  loop,
		memifwiring.PluginName: decode(t, memifwiring.PluginName, cmp.Or(setup.wiringConf, "mtu: 9000\nrx-mode: polling\n"), wiring.Config{}),
	}
	if setup.networksConf != "" {
		configs[networks.PluginName] = decode(t, networks.PluginName, setup.networksConf, netconf.Config{})
	}
	if setup.vswitchConf != "" {
		configs[vswitch.PluginName] = decode(t, vswitch.PluginName, setup.vswitchConf, vswitch.DefaultConfig())
	}
	if setup.deviceManager != nil {
		configs[devicemanager.PluginName] = *setup.deviceManager
	}
	if setup.dra != nil {
		configs[dradriver.PluginName] = *setup.dra
	}
	return configs
}

// decode reads content, the file <name>.conf, over defaults.
func decode[T any](t testing.TB, name, content string, defaults T) T {
	t.Helper()
	if err := configfile.Decode([]byte(content), &defaults); err != nil {
		t.Fatalf("%s.conf: %v", name, err)
	}
	return defaults
}

// deviceManagerConfig is devicemanager.conf's defaults with the node's
// paths in dir; kubelet's registration socket is the test's to serve.
func deviceManagerConfig(dir string) dmconfig.Config {
	cfg := dmconfig.Default()
	cfg.PluginDir = filepath.Join(dir, "device-plugins")
	cfg.SocketRoot = filepath.Join(dir, "memif")
	cfg.CheckpointPath = filepath.Join(dir, "state", "checkpoint.json")
	cfg.DeviceInfoDir = filepath.Join(dir, "devinfo")
	return cfg
}

// allocate does what kubelet's Allocate does for one container.
func (a *testAgent) allocate(t testing.TB, deviceIDs ...string) *dmapi.AllocateDevice {
	t.Helper()
	event := dmapi.NewAllocateDevice(dmapi.DefaultResourceName, deviceIDs)
	a.Push(t, event)
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
	values, err := a.KVScheduler.DumpValuesByKeyPrefix(vpp_interfaces.ModelInterface.KeyPrefix(), kvs.CachedView)
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

// restDumpInterfaces reads the vpp interfaces from the scheduler's REST
// dump (GET /scheduler/dump) on the agent's HTTP server, as an operator
// would with curl.
func (a *testAgent) restDumpInterfaces(t testing.TB) map[string]*vpp_interfaces.Interface {
	t.Helper()
	query := url.Values{"key-prefix": {vpp_interfaces.ModelInterface.KeyPrefix()}, "view": {"NB"}}
	dumpURL := "http://" + a.HTTPAddr + "/scheduler/dump?" + query.Encode()
	response, err := http.Get(dumpURL)
	if err != nil {
		t.Fatalf("GET %s: %v", dumpURL, err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil || response.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s (%v)", dumpURL, response.StatusCode, body, err)
	}
	var dump []struct {
		Key   string
		Value struct{ ProtoMsgName, ProtoMsgData string }
	}
	if err := json.Unmarshal(body, &dump); err != nil {
		t.Fatalf("decode the scheduler dump: %v", err)
	}
	interfaces := map[string]*vpp_interfaces.Interface{}
	for _, kv := range dump {
		iface := &vpp_interfaces.Interface{}
		if err := jsonpb.UnmarshalString(kv.Value.ProtoMsgData, iface); err != nil {
			t.Fatalf("decode %s from the scheduler dump: %v", kv.Key, err)
		}
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
	a.Push(t, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{container("app", app), container("sidecar", sidecar)}})
	a.Barrier(t)
	return pod, app, sidecar
}

// executedOperations counts what the agent's scheduler changed in VPP: an
// operation recorded as NOOP changed nothing (a memif's rx modes left
// pending while its link is down).
func executedOperations(a *testAgent) []string {
	var changed []string
	for _, txn := range a.KVScheduler.GetTransactionHistory(time.Time{}, time.Now()) {
		for _, op := range txn.Executed {
			if !op.NOOP {
				changed = append(changed, fmt.Sprintf("transaction %d (%s) changed %s: %s", txn.SeqNum, txn.Description, op.Key, op.Operation))
			}
		}
	}
	return changed
}
