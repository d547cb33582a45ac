// Command memif-agent is the node agent that gives Kubernetes pods memif
// interfaces to a userspace vswitch. It serves kubelet's device plugin API
// for contivpp.io/memif and runs every state change through one controller
// event loop; see the README for the flows and the configuration.
//
// Each plugin's config file is <plugin>.conf in -config-dir. A -config-dir
// that is given must exist: a missing one stops the agent, naming it. With
// no -config-dir no directory is read, and every plugin runs on its
// built-in defaults (a file a -<plugin>-config flag names is still read).
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/ligato/cn-infra/agent"
	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/logging"
	"github.com/ligato/cn-infra/logging/logmanager"
	"github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"
	"github.com/namsral/flag"

	"github.com/contivpp/memif-agent/internal/version"
	"github.com/contivpp/memif-agent/plugins/controller"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager"
	"github.com/contivpp/memif-agent/plugins/dradriver"
	"github.com/contivpp/memif-agent/plugins/health"
	"github.com/contivpp/memif-agent/plugins/memifwiring"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	metricsplugin "github.com/contivpp/memif-agent/plugins/metrics"
	"github.com/contivpp/memif-agent/plugins/networks"
	"github.com/contivpp/memif-agent/plugins/nodeapi"
	"github.com/contivpp/memif-agent/plugins/podevents"
	"github.com/contivpp/memif-agent/plugins/podmanager"
	"github.com/contivpp/memif-agent/plugins/vswitch"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

func main() {
	if slices.ContainsFunc(os.Args[1:], isVersionFlag) {
		fmt.Print(version.Get())
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == probeCommand {
		os.Exit(runProbe(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == scrapeCommand {
		os.Exit(runScrape(os.Args[2:], os.Stdout, os.Stderr))
	}
	memifAgent := newMemifAgent()
	if err := parseCommandLine(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	// SIGHUP (the terminal that started the agent went away) stops it as
	// SIGTERM does, closing its sockets, rather than killing it.
	quit := agent.QuitSignals(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// The device manager's Init may wait for the agent this one replaces.
	startTimeout := agent.StartTimeout(devicemanager.NodeLockWait + agent.DefaultStartTimeout)
	if err := agent.NewAgent(agent.AllPlugins(memifAgent), quit, startTimeout).Run(); err != nil {
		fmt.Fprintln(os.Stderr, "memif-agent:", err)
		os.Exit(1)
	}
}

// isVersionFlag: --version is read before the flags, not declared as one,
// because the flag package would also take it from $VERSION, which
// images and pods set for their own purposes.
func isVersionFlag(arg string) bool { return arg == "--version" || arg == "-version" }

// parseCommandLine parses the flags every plugin declared (forPlugin) and
// -config-dir. cn-infra's agent parses the command line only when nobody
// did, and exits 2 even for -help; here -help is ErrHelp, for an exit 0.
// A bad flag has been reported with the usage, and a -config-dir that is
// not a directory with what to do, when it returns.
func parseCommandLine(args []string) error {
	defineConfigDirFlag()
	flag.CommandLine.Init(os.Args[0], flag.ContinueOnError)
	flag.Usage = printUsage
	if err := flag.CommandLine.Parse(args); err != nil {
		return err
	}
	if err := checkConfigDir(); err != nil {
		fmt.Fprintln(os.Stderr, "memif-agent:", err)
		return err
	}
	return nil
}

func printUsage() {
	fmt.Fprint(os.Stderr, `memif-agent gives Kubernetes pods memif interfaces to a userspace vswitch.

It registers the extended resource contivpp.io/memif with kubelet, answers
Allocate with a per-pod socket directory and secret, tracks which pod holds
which memif, and releases them when the pod goes away.

Every plugin reads a YAML config file: -<plugin>-config, a file name in
-config-dir (a path with a directory part is taken as it is). A missing file
means the plugin's defaults; an unknown key or a bad value stops the agent
with an error naming the file and the key. A -config-dir that does not exist
stops the agent; with no -config-dir, every plugin runs on its built-in
defaults. Each flag can also be set with the environment variable named in
its description.

Usage: memif-agent [flags]
       memif-agent probe [-socket PATH] liveness|readiness  (kubelet's exec probes)
       memif-agent scrape [-timeout D] http://ADDRESS:PORT/metrics  (print an agent's metrics)
       memif-agent --version  (the version, git commit and VPP release it speaks)

Flags:
`)
	flag.CommandLine.PrintDefaults()
}

// memifAgent lists the agent's plugins. cn-infra initializes each plugin
// after the plugins it depends on, in field order otherwise.
type memifAgent struct {
	LogManager    *logmanager.Plugin
	HTTP          *deferredHTTP
	Health        *health.Plugin
	Prometheus    *prometheus.Plugin
	KVScheduler   *kvscheduler.Scheduler
	PodManager    *podmanager.Plugin
	DeviceManager *devicemanager.Plugin
	MemifWiring   *memifwiring.Plugin
	// Networks reads networks.conf (after memifwiring.conf, whose legacy
	// keys it applies) and pushes its changes into the loop.
	Networks *networks.Plugin
	// VSwitch registers the VPP descriptors and makes its first dial to
	// VPP in its Init, before the controller's startup resync in
	// AfterInit (the controller is initialised before it, as its
	// EventLoop dependency).
	VSwitch    *vswitch.Plugin
	Controller *controller.Plugin
	DRADriver  *dradriver.Plugin
	// PodEvents posts the memif wiring's pod events, through the DRA
	// driver's API server client when it has one: after it.
	PodEvents *podevents.Plugin
	NodeAPI   *nodeapi.Plugin
	// Metrics serves the metrics read-only on the pod's address
	// (metrics.conf), for the cluster's Prometheus; the loopback HTTP
	// server serves them too.
	Metrics *metricsplugin.Plugin
	// StartServing must stay last: it starts the probe socket and the
	// HTTP server once every plugin has started and registered its routes.
	StartServing *servingStarter
}

func newMemifAgent() *memifAgent {
	httpServer := &deferredHTTP{server: rest.NewPlugin(rest.UseDeps(func(deps *rest.Deps) {
		deps.Cfg = withAgentDefaults(forPlugin("http", config.WithExtraFlags(func(flags *config.FlagSet) {
			flags.String("http-port", rest.DefaultHTTPPort,
				"Port of the HTTP server (probes, metrics, event history); it listens on 127.0.0.1 unless http.conf sets another endpoint")
			flags.Bool(allowChangesFlag, false,
				"Serve the HTTP endpoints that change the agent (POST /controller/resync, PUT /log/..., POST /scheduler/downstream-resync); off, they answer 403")
		})))
	}))}
	metrics := prometheus.NewPlugin(prometheus.UseDeps(func(deps *prometheus.Deps) {
		deps.HTTP = httpServer
	}))
	agentHealth := health.NewPlugin(health.UseDeps(func(deps *health.Deps) {
		deps.Cfg = forPlugin(health.PluginName)
		deps.HTTPHandlers = httpServer
	}))
	logManager := logmanager.NewPlugin(logmanager.UseDeps(func(deps *logmanager.Deps) {
		deps.Cfg = forPlugin("logs")
		deps.HTTP = httpServer
	}))
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) {
		deps.HTTPHandlers = secretRedactingHandlers{httpServer}
		deps.Cfg = withAgentDefaults(forPlugin("kvscheduler"))
	}))

	podManager := podmanager.NewPlugin(podmanager.UseDeps(func(deps *podmanager.Deps) {
		deps.Cfg = forPlugin(podmanager.PluginName)
	}))
	deviceManager := devicemanager.NewPlugin(devicemanager.UseDeps(func(deps *devicemanager.Deps) {
		deps.Cfg = forPlugin(devicemanager.PluginName)
		deps.PodLister = podManager
		deps.PodResolver = podManager
		deps.Prometheus = metrics
		deps.StatusCheck = agentHealth
	}))
	networksPlugin := networks.NewPlugin(networks.UseDeps(func(deps *networks.Deps) {
		deps.Cfg = forPlugin(networks.PluginName)
	}))
	podEvents := podevents.NewPlugin(podevents.UseDeps(func(deps *podevents.Deps) {
		deps.Allocations = deviceManager
	}))
	memifWiring := memifwiring.NewPlugin(memifwiring.UseDeps(func(deps *memifwiring.Deps) {
		deps.Cfg = forPlugin(memifwiring.PluginName)
		deps.DeviceManager = deviceManager
		deps.Networks = networksPlugin
		deps.Prometheus = metrics
		deps.Events = wiringEvents{podEvents}
	}))
	networksPlugin.Legacy = memifWiring.LegacyNetworks
	vswitchPlugin := vswitch.NewPlugin(vswitch.UseDeps(func(deps *vswitch.Deps) {
		deps.Cfg = forPlugin(vswitch.PluginName)
		deps.KVScheduler = scheduler
		deps.StatusCheck = agentHealth
		deps.LinkEvents = linkEvents{podEvents}
	}))
	memifWiring.Links = memifLinks{vswitchPlugin}
	deviceManager.Vswitch = vswitchPlugin
	eventLoop := controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
		deps.Cfg = forPlugin(controller.PluginName)
		deps.KVScheduler = scheduler
		deps.HTTPHandlers = httpServer
		deps.StatusCheck = agentHealth
		deps.Prometheus = metrics
		// Update events visit the handlers in this order, Reverse events
		// (DeletePod) the opposite: the vswitch side is built after the
		// allocation is bound and removed before it is released.
		deps.EventHandlers = []controllerapi.EventHandler{deviceManager, memifWiring}
	}))
	// The loop and the plugins that push into it refer to each other.
	podManager.EventLoop = eventLoop
	deviceManager.EventLoop = eventLoop
	vswitchPlugin.EventLoop = eventLoop
	networksPlugin.EventLoop = eventLoop
	draDriver := dradriver.NewPlugin(dradriver.UseDeps(func(deps *dradriver.Deps) {
		deps.Cfg = forPlugin(dradriver.PluginName)
		deps.EventLoop = eventLoop
		deps.DeviceManager = deviceManager
	}))
	podEvents.DRADriver = draDriver
	nodeAPI := nodeapi.NewPlugin(nodeapi.UseDeps(func(deps *nodeapi.Deps) {
		deps.Cfg = forPlugin(nodeapi.PluginName)
		deps.DeviceManager = deviceManager
		deps.Controller = eventLoop
	}))

	metricsListener := metricsplugin.NewPlugin(metricsplugin.UseDeps(func(deps *metricsplugin.Deps) {
		deps.Cfg = forPlugin(metricsplugin.PluginName)
	}))

	// Handed over in this order: kubelet's DRA calls go to the successor,
	// the loop finishes what it took, then the shared listeners close.
	deviceManager.HandOverWith(draDriver, eventLoop, httpServer, metricsListener, nodeAPI)

	return &memifAgent{
		LogManager:    logManager,
		HTTP:          httpServer,
		Health:        agentHealth,
		Prometheus:    metrics,
		KVScheduler:   scheduler,
		PodManager:    podManager,
		DeviceManager: deviceManager,
		MemifWiring:   memifWiring,
		Networks:      networksPlugin,
		VSwitch:       vswitchPlugin,
		Controller:    eventLoop,
		DRADriver:     draDriver,
		PodEvents:     podEvents,
		NodeAPI:       nodeAPI,
		Metrics:       metricsListener,
		StartServing:  &servingStarter{health: agentHealth, http: httpServer},
	}
}

// wiringEvents gives the memif wiring the pod events as no plugin, so
// that cn-infra's dependency lookup does not follow that edge: followed,
// it closed the loop controller (the wiring is its handler), wiring, pod
// events, DRA driver, controller, and the lookup started the DRA driver
// before the controller. The driver's AfterInit waits on the loop, which
// the controller's AfterInit starts, for its claims' sync: it registered
// with kubelet only after that wait's 30 s timeout, too late for the
// driver it replaced, whose node ResourceSlices kubelet deletes 30 s after
// it went. The wiring only tells the pod events, and needs nothing of them
// to start.
type wiringEvents struct{ wiring.PodEvents }

// linkEvents gives the vswitch the pod events, and memifLinks the memif
// wiring the vswitch's links, as no plugin, for the same reason: followed,
// either edge would make cn-infra start the pod events (and so the DRA
// driver and the controller) before the vswitch, or the vswitch before
// the memif wiring. Each only tells or reads the other once both run.
type (
	linkEvents struct{ vswitchapi.LinkEvents }
	memifLinks struct{ vswitchapi.LinkReader }
)

// String implements infra.Plugin.
func (a *memifAgent) String() string { return "memif-agent" }

// Init implements infra.Plugin.
func (a *memifAgent) Init() error {
	build := version.Get()
	logging.DefaultLogger.Infof("memif-agent %s starting (commit %s, VPP binary API of %s)", build.Version, build.Commit, build.VPPRelease)
	return nil
}

// Close implements infra.Plugin.
func (a *memifAgent) Close() error { return nil }
