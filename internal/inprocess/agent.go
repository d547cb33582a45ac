package inprocess

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ligato/cn-infra/agent"
	"github.com/ligato/cn-infra/infra"
	"github.com/ligato/cn-infra/logging"
	"github.com/ligato/cn-infra/logging/logrus"
	"github.com/ligato/cn-infra/rpc/rest"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"
	"github.com/namsral/flag"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/internal/agentwiring"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager"
	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/health"
	metricsplugin "github.com/contivpp/memif-agent/plugins/metrics"
	"github.com/contivpp/memif-agent/plugins/metrics/listener"
	"github.com/contivpp/memif-agent/plugins/nodeapi"
	"github.com/contivpp/memif-agent/plugins/podmanager"
	"github.com/contivpp/memif-agent/plugins/vswitch"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/test/kit/eventlog"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/fakepodresources"
	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// Options are what a test chooses about its agent; the zero value is an
// agent on the defaults, with every path in a fresh directory, registered
// with a fake kubelet registration server, the fake pod-resources API
// (listing no pod) as its only pod source, and no VPP.
type Options struct {
	// Dir holds the agent's config files, state and sockets; "": a fresh
	// temporary directory. Two agents on one Dir are one agent restarted.
	Dir string
	// Configs are plugins' configs by plugin name
	// (agentwiring.PluginConfigs), each of the type that table gives the
	// plugin (or a pointer to one), written as the agent's <name>.conf. A
	// config given is used whole: the paths in it are the test's.
	Configs map[string]any
	// VswitchStandIn are KV descriptors registered with the KV scheduler
	// before the startup resync, standing in for VPP: with them, and no
	// vpp-api-socket in vswitch.conf, they hold the vswitch side.
	VswitchStandIn []*kvs.KVDescriptor
	// Reachability, when set, is the vswitch reachability the devices'
	// health follows, in place of the vswitch plugin's: the test says
	// when VPP answers.
	Reachability vswitchapi.VswitchAPI
	// KubeletInterceptor, when set, wraps each of kubelet's calls to the
	// agent's device plugin and DRA driver
	// (agentwiring.WithKubeletInterceptor).
	KubeletInterceptor grpc.UnaryServerInterceptor
	// DRAClient, when set, is the DRA driver's API server client
	// (agentwiring.WithDRAClient); without it, dradriver.conf's
	// kubeconfig makes one.
	DRAClient kubernetes.Interface
	// PodEvents, when set, records every event the pod manager pushed
	// into the loop and the loop accepted, in push order: what the pod
	// tracker announced and decided, apart from what else was pushed.
	PodEvents *eventlog.Log

	// The options below put a test's part beside or in place of one of
	// the agent's (seams.go), for the tests of one plugin's logic that
	// must observe, refuse or decide what the real part would.

	// FirstHandler, when set, is the loop's first event handler, before
	// the device manager (and so the last for reverse events, DeletePod):
	// the test observes the events processed or fails one.
	FirstHandler controllerapi.EventHandler
	// PodSources, when set, are the device manager's pod sources in place
	// of the pod manager, which then does not run (and Agent.PodManager
	// is nil): the test pushes AddPod and DeletePod itself and says which
	// pods are alive. It excludes PodEvents.
	PodSources *PodSources
	// WrapVswitchScheduler, when set, wraps the KV scheduler the vswitch
	// plugin registers VPP's descriptors with: the test sees what VPP is
	// told, as VPP is told it.
	WrapVswitchScheduler func(kvs.KVScheduler) kvs.KVScheduler
	// VswitchLog, when set, receives the vswitch plugin's log, debug lines
	// included, in place of the test's log: the test reads what the
	// vswitch says of VPP's links.
	VswitchLog io.Writer
	// Span, when set, tells the memif wiring how the networks span nodes,
	// in place of the crossnode plugin: the test changes it, and pushes
	// crossnodeapi.SpanChanged as that plugin would.
	Span crossnodeapi.SpanSource
}

// Agent is one agent running in the test's process.
type Agent struct {
	// Agent is its plugins.
	*agentwiring.Agent
	// Dir holds its config files (ConfigDir), state and sockets.
	Dir       string
	ConfigDir string
	// Metrics is the registry of the agent's metrics.
	Metrics *prometheus.Registry
	// PodResources is the fake pod-resources API the agent lists pods
	// from; nil when the test configured the pod manager or gave
	// Options.PodSources.
	PodResources *fakepodresources.Server
	// HTTPAddr and MetricsAddr are where the agent's HTTP server and
	// metrics listener serve, when the harness configured them.
	HTTPAddr, MetricsAddr string

	tb testing.TB
	// plugins are in start order; initialized counts those whose Init
	// ran, and so must be closed.
	plugins     []infra.Plugin
	initialized int
	stopOnce    sync.Once
}

// Start starts an agent as opts say, and returns once its startup resync
// ran; the agent is stopped when the test ends, unless Stop stopped it
// before. A plugin failing to start fails the test,
// once the plugins started are stopped.
func Start(tb testing.TB, opts Options) *Agent {
	tb.Helper()
	a := &Agent{Dir: opts.Dir, Metrics: prometheus.NewRegistry(), tb: tb}
	if a.Dir == "" {
		// Short: unix socket paths must fit in 108 bytes.
		dir, err := os.MkdirTemp("", "ip")
		if err != nil {
			tb.Fatalf("create the agent's directory: %v", err)
		}
		tb.Cleanup(func() { os.RemoveAll(dir) })
		a.Dir = dir
	}
	a.ConfigDir = filepath.Join(a.Dir, "config")
	a.writeConfigs(tb, opts)
	wiring := []agentwiring.Option{agentwiring.WithMetrics(a.Metrics)}
	if opts.KubeletInterceptor != nil {
		wiring = append(wiring, agentwiring.WithKubeletInterceptor(opts.KubeletInterceptor))
	}
	if opts.DRAClient != nil {
		wiring = append(wiring, agentwiring.WithDRAClient(opts.DRAClient))
	}
	a.Agent = agentwiring.New(agentwiring.DirConfigs(a.ConfigDir), wiring...)
	// The agent's plugins log to stderr, which go test mixes into its
	// own output (a benchmark's result line among them): to tb's log
	// instead, until Stop.
	logTo(testlog.Writer(tb))
	if opts.Reachability != nil {
		a.DeviceManager.Vswitch = opts.Reachability
	}
	a.plugins = startOrder(a.Agent)
	if opts.PodSources != nil {
		if opts.PodEvents != nil {
			tb.Fatalf("Options.PodEvents records the pod manager's events, and with Options.PodSources it does not run")
		}
		a.usePodSources(*opts.PodSources)
	}
	if opts.PodEvents != nil {
		// After startOrder: the recorder is no plugin, and cn-infra
		// would no longer start the loop before the pod manager.
		a.PodManager.EventLoop = recordingLoop{EventLoop: a.PodManager.EventLoop, pushed: opts.PodEvents}
	}
	a.placeTestParts(opts)
	tb.Cleanup(a.Stop)
	if err := a.start(opts.VswitchStandIn); err != nil {
		a.Stop()
		tb.Fatalf("start the agent in %s: %v", a.Dir, err)
	}
	a.wait(tb, &barrier{controllerapi.NewResult()}, startLimit)
	return a
}

// Resync runs a full resync on the agent's loop and returns once it
// ran.
func (a *Agent) Resync(tb testing.TB) {
	tb.Helper()
	a.wait(tb, eventloop.NewResyncEvent(eventloop.RequestedResyncName), waitLimit)
}

// Barrier returns once every event pushed into the agent's loop before it
// has been processed.
func (a *Agent) Barrier(tb testing.TB) {
	tb.Helper()
	a.wait(tb, &barrier{controllerapi.NewResult()}, waitLimit)
}

// Push pushes event into the agent's loop, failing the test when the loop
// refuses it.
func (a *Agent) Push(tb testing.TB, event controllerapi.Event) {
	tb.Helper()
	if err := a.Controller.PushEvent(event); err != nil {
		tb.Fatalf("push %s: %v", event, err)
	}
}

// wait pushes the blocking event and waits at most limit until it has
// been processed, failing the test when it failed or did not end.
func (a *Agent) wait(tb testing.TB, event interface {
	controllerapi.Event
	Wait(context.Context) error
}, limit time.Duration) {
	tb.Helper()
	a.Push(tb, event)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := event.Wait(ctx); err != nil {
		tb.Fatalf("%s: %v", event, err)
	}
}

// Failure deadlines, not asserted durations: waitLimit for an event,
// startLimit for the startup resync, which on a loaded machine takes
// tens of seconds for a thousand memifs.
const (
	waitLimit  = time.Minute
	startLimit = 5 * time.Minute
)

// barrier is a blocking event no handler wants: once it is done, every
// event pushed before it has been processed.
type barrier struct{ *controllerapi.Result }

func (*barrier) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "TestBarrier", Blocking: true, Transaction: controllerapi.BestEffortIgnoreErrors}
}
func (*barrier) String() string { return "test barrier" }

// startOrder is the order cn-infra starts the plugins of wired in.
func startOrder(wired *agentwiring.Agent) []infra.Plugin {
	// cn-infra parses the command line when it has not been parsed: a
	// test binary's flags are not the agent's.
	parseOnce.Do(func() {
		if !flag.Parsed() {
			_ = flag.CommandLine.Parse(nil)
		}
	})
	return agent.NewAgent(agent.AllPlugins(wired)).Options().Plugins
}

var parseOnce sync.Once

// start runs every Init, registers standIn, then runs every AfterInit, as
// cn-infra does.
func (a *Agent) start(standIn []*kvs.KVDescriptor) error {
	for _, plugin := range a.plugins {
		a.initialized++
		if err := plugin.Init(); err != nil {
			return fmt.Errorf("%s Init: %w", plugin, err)
		}
	}
	for _, descriptor := range standIn {
		if err := a.KVScheduler.RegisterKVDescriptor(descriptor); err != nil {
			return fmt.Errorf("register the stand-in descriptor %s: %w", descriptor.Name, err)
		}
	}
	for _, plugin := range a.plugins {
		if after, ok := plugin.(infra.PostInit); ok {
			if err := after.AfterInit(); err != nil {
				return fmt.Errorf("%s AfterInit: %w", plugin, err)
			}
		}
	}
	return nil
}

// Stop closes the plugins in the reverse of their start order, as
// cn-infra does, then drops the node lock, as the agent's process exiting
// does; later calls do nothing.
func (a *Agent) Stop() {
	a.stopOnce.Do(func() {
		for i := a.initialized - 1; i >= 0; i-- {
			if err := a.plugins[i].Close(); err != nil {
				a.tb.Errorf("close %s: %v", a.plugins[i], err)
			}
		}
		if err := a.DeviceManager.ReleaseNodeLock(); err != nil {
			a.tb.Errorf("%v", err)
		}
		logTo(os.Stderr)
	})
}

// writeConfigs writes every plugin's config file: the test's, or the
// harness's (harnessConfigs).
func (a *Agent) writeConfigs(tb testing.TB, opts Options) {
	tb.Helper()
	given := opts.Configs
	if err := os.MkdirAll(a.ConfigDir, 0o700); err != nil {
		tb.Fatalf("create the agent's config directory: %v", err)
	}
	for name, cfg := range given {
		file, found := agentwiring.LookupPluginConfig(name)
		if !found {
			tb.Fatalf("Options.Configs names %q: the agent has no such plugin config (agentwiring.PluginConfigs)", name)
		}
		if want := reflect.TypeOf(file.New()); reflect.TypeOf(cfg) != want && reflect.TypeOf(cfg) != want.Elem() {
			tb.Fatalf("Options.Configs[%q] is a %T; want a %s", name, cfg, want.Elem())
		}
	}
	configs := a.harnessConfigs(tb, given, opts.PodSources == nil)
	for name, cfg := range given {
		configs[name] = cfg
	}
	for name, cfg := range configs {
		content, err := json.Marshal(cfg)
		if err != nil {
			tb.Fatalf("encode %s.conf: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(a.ConfigDir, name+".conf"), content, 0o600); err != nil {
			tb.Fatalf("write %s.conf: %v", name, err)
		}
	}
}

// harnessConfigs are the configs of the plugins that given leaves out and
// that would otherwise reach outside the agent's directory: the node's
// paths, the default ports, VPP's socket. The stand-ins they name are
// started; the pod manager's only when it runs (podManager).
func (a *Agent) harnessConfigs(tb testing.TB, given map[string]any, podManager bool) map[string]any {
	tb.Helper()
	configs := map[string]any{}
	if _, ok := given[devicemanager.PluginName]; !ok {
		cfg := dmconfig.Default()
		cfg.PluginDir = filepath.Join(a.Dir, "device-plugins")
		cfg.SocketRoot = filepath.Join(a.Dir, "memif")
		cfg.CheckpointPath = filepath.Join(a.Dir, "state", "checkpoint.json")
		cfg.DeviceInfoDir = filepath.Join(a.Dir, "devinfo")
		standIns.once(tb, cfg.PluginDir, func() any {
			fakekubelet.StartForAgent(tb, cfg.PluginDir)
			return nil
		})
		configs[devicemanager.PluginName] = cfg
	}
	if _, ok := given[podmanager.PluginName]; !ok && podManager {
		cfg := podmanager.DefaultConfig()
		cfg.Runtime = podmanager.RuntimeNone
		cfg.PodResourcesSocket = filepath.Join(a.Dir, "pod-resources.sock")
		a.PodResources = standIns.once(tb, cfg.PodResourcesSocket, func() any {
			return fakepodresources.Serve(tb, cfg.PodResourcesSocket)
		}).(*fakepodresources.Server)
		configs[podmanager.PluginName] = cfg
	}
	if _, ok := given[vswitch.PluginName]; !ok {
		cfg := vswitch.DefaultConfig()
		cfg.VPPAPISocket = ""
		configs[vswitch.PluginName] = cfg
	}
	if _, ok := given[nodeapi.PluginName]; !ok {
		cfg := nodeapi.DefaultConfig()
		cfg.SocketPath = filepath.Join(a.Dir, "api", "api.sock")
		configs[nodeapi.PluginName] = cfg
	}
	if _, ok := given[health.PluginName]; !ok {
		cfg := health.DefaultConfig()
		cfg.ProbeSocket = filepath.Join(a.Dir, "api", "probe.sock")
		configs[health.PluginName] = cfg
	}
	if _, ok := given[metricsplugin.PluginName]; !ok {
		port := loopback.FreePort(tb)
		a.MetricsAddr = net.JoinHostPort("127.0.0.1", port)
		configs[metricsplugin.PluginName] = listener.Config{Address: "127.0.0.1", Port: atoi(tb, port)}
	}
	if _, ok := given["http"]; !ok {
		a.HTTPAddr = net.JoinHostPort("127.0.0.1", loopback.FreePort(tb))
		configs["http"] = rest.Config{Endpoint: a.HTTPAddr}
	}
	return configs
}

func atoi(tb testing.TB, port string) int {
	tb.Helper()
	n, err := strconv.Atoi(port)
	if err != nil {
		tb.Fatalf("port %q: %v", port, err)
	}
	return n
}

// standIns are the stand-ins serving agents, by socket: an agent started
// again on the same Dir finds its kubelet still there, as on a node.
var standIns = &standInSet{started: map[string]any{}}

type standInSet struct {
	mu      sync.Mutex
	started map[string]any
}

// once returns what start returned for socket, calling start when no
// stand-in serves socket yet; the stand-in is forgotten when tb's test
// ends (start's own cleanup stops it).
func (s *standInSet) once(tb testing.TB, socket string, start func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if standIn, found := s.started[socket]; found {
		return standIn
	}
	standIn := start()
	s.started[socket] = standIn
	tb.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.started, socket)
	})
	return standIn
}

// recordingLoop is an event loop that records in pushed the events it
// accepted.
type recordingLoop struct {
	controllerapi.EventLoop
	pushed *eventlog.Log
}

func (l recordingLoop) PushEvent(event controllerapi.Event) error {
	err := l.EventLoop.PushEvent(event)
	if err == nil {
		l.pushed.Add(event)
	}
	return err
}

// logTo sends what cn-infra's loggers, every plugin's among them, write
// to out.
func logTo(out io.Writer) {
	logrus.DefaultLogger().SetOutput(out)
	for name := range logging.DefaultRegistry.ListLoggers() {
		if logger, found := logging.DefaultRegistry.Lookup(name); found {
			if settable, ok := logger.(interface{ SetOutput(io.Writer) }); ok {
				settable.SetOutput(out)
			}
		}
	}
}
