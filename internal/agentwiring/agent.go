package agentwiring

import (
	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/logging/logmanager"
	"github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"

	"github.com/contivpp/memif-agent/internal/version"
	"github.com/contivpp/memif-agent/plugins/controller"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/crossnode"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
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

// Configs gives the plugin called name its configuration; opts declare
// the plugin's extra flags, as config.ForPlugin's do.
type Configs func(name string, opts ...config.Option) config.PluginConfig

// Agent lists the agent's plugins. cn-infra initializes each plugin
// after the plugins it depends on, in field order otherwise.
type Agent struct {
	LogManager    *logmanager.Plugin
	HTTP          *DeferredHTTP
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
	// CrossNode, when crossnode.conf sets an underlay address, makes the
	// networks span nodes: its Span is read from its Init on, and it
	// pushes into the loop the controller's AfterInit started.
	CrossNode *crossnode.Plugin
	DRADriver *dradriver.Plugin
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
	StartServing *ServingStarter
}

// New makes the agent's plugins, each configured by configs, and wires
// them together.
func New(configs Configs, opts ...Option) *Agent {
	var o options
	for _, set := range opts {
		set(&o)
	}
	httpServer := &DeferredHTTP{server: rest.NewPlugin(rest.UseDeps(func(deps *rest.Deps) {
		deps.Cfg = withAgentDefaults(configs("http", config.WithExtraFlags(func(flags *config.FlagSet) {
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
		deps.Cfg = configs(health.PluginName)
		deps.HTTPHandlers = httpServer
	}))
	logManager := logmanager.NewPlugin(logmanager.UseDeps(func(deps *logmanager.Deps) {
		deps.Cfg = configs("logs")
		deps.HTTP = httpServer
	}))
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) {
		deps.HTTPHandlers = secretRedactingHandlers{httpServer}
		deps.Cfg = withAgentDefaults(configs("kvscheduler"))
	}))
	registry := o.registry(metrics)

	podManager := podmanager.NewPlugin(podmanager.UseDeps(func(deps *podmanager.Deps) {
		deps.Cfg = configs(podmanager.PluginName)
	}))
	deviceManager := devicemanager.NewPlugin(devicemanager.UseDeps(func(deps *devicemanager.Deps) {
		deps.Cfg = configs(devicemanager.PluginName)
		deps.LivePods = podManager
		deps.PodResolver = podManager
		deps.Prometheus = registry
		deps.StatusCheck = agentHealth
		deps.KubeletInterceptor = o.kubeletInterceptor
	}))
	networksPlugin := networks.NewPlugin(networks.UseDeps(func(deps *networks.Deps) {
		deps.Cfg = configs(networks.PluginName)
	}))
	podEvents := podevents.NewPlugin(podevents.UseDeps(func(deps *podevents.Deps) {
		deps.Allocations = deviceManager
	}))
	memifWiring := memifwiring.NewPlugin(memifwiring.UseDeps(func(deps *memifwiring.Deps) {
		deps.Cfg = configs(memifwiring.PluginName)
		deps.DeviceManager = deviceManager
		deps.Networks = networksPlugin
		deps.Prometheus = registry
		deps.Events = wiringEvents{podEvents}
	}))
	networksPlugin.Legacy = memifWiring.LegacyNetworks
	crossNode := crossnode.NewPlugin(crossnode.UseDeps(func(deps *crossnode.Deps) {
		deps.Cfg = configs(crossnode.PluginName)
		deps.Networks = networksPlugin
	}))
	memifWiring.Span = spanSource{crossNode}
	vswitchPlugin := vswitch.NewPlugin(vswitch.UseDeps(func(deps *vswitch.Deps) {
		deps.Cfg = configs(vswitch.PluginName)
		deps.KVScheduler = scheduler
		deps.StatusCheck = agentHealth
		deps.LinkEvents = linkEvents{podEvents}
	}))
	memifWiring.Links = memifLinks{vswitchPlugin}
	deviceManager.Vswitch = vswitchReachability{vswitchPlugin}
	eventLoop := controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
		deps.Cfg = configs(controller.PluginName)
		deps.KVScheduler = scheduler
		deps.HTTPHandlers = httpServer
		deps.StatusCheck = agentHealth
		deps.Prometheus = registry
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
	crossNode.EventLoop = eventLoop
	draDriver := dradriver.NewPlugin(dradriver.UseDeps(func(deps *dradriver.Deps) {
		deps.Cfg = configs(dradriver.PluginName)
		deps.EventLoop = eventLoop
		deps.DeviceManager = deviceManager
		deps.KubeletInterceptor = o.kubeletInterceptor
		deps.Client = o.draClient
		deps.Vswitch = draVswitch{vswitchPlugin}
	}))
	podEvents.DRADriver = draDriver
	nodeAPI := nodeapi.NewPlugin(nodeapi.UseDeps(func(deps *nodeapi.Deps) {
		deps.Cfg = configs(nodeapi.PluginName)
		deps.DeviceManager = deviceManager
		deps.Controller = eventLoop
	}))

	metricsListener := metricsplugin.NewPlugin(metricsplugin.UseDeps(func(deps *metricsplugin.Deps) {
		deps.Cfg = configs(metricsplugin.PluginName)
		if o.metrics != nil {
			deps.Gatherer = o.metrics
		}
	}))

	// Handed over in this order: kubelet's DRA calls go to the successor,
	// the loop finishes what it took, then the shared listeners close.
	deviceManager.HandOverWith(draDriver, eventLoop, httpServer, metricsListener, nodeAPI)

	return &Agent{
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
		CrossNode:     crossNode,
		DRADriver:     draDriver,
		PodEvents:     podEvents,
		NodeAPI:       nodeAPI,
		Metrics:       metricsListener,
		StartServing:  &ServingStarter{health: agentHealth, http: httpServer},
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

// vswitchReachability gives the device manager the vswitch's reachability
// as no plugin: followed, the edge made cn-infra start the vswitch before
// the device manager, the controller's handler, and so before the
// controller. The vswitch's Init connects to VPP and pushes its resync
// into the loop, which the controller's Init makes: pushed into none, the
// resync was lost and logged as an error at every start. The device
// manager reads the reachability from its AfterInit on, once every Init
// ran.
type vswitchReachability struct{ vswitchapi.VswitchAPI }

// draVswitch gives the DRA driver's claim status VPP's links as no
// plugin, for the reason vswitchReachability does: the driver reads them
// from its AfterInit on.
type draVswitch struct{ dradriver.VswitchSource }

// spanSource gives the memif wiring the cross-node span as no plugin:
// followed, the edge would make cn-infra start the crossnode plugin, and
// through its event loop the controller, before the wiring, the
// controller's handler.
type spanSource struct{ crossnodeapi.SpanSource }

// String implements infra.Plugin.
func (a *Agent) String() string { return "memif-agent" }

// Init implements infra.Plugin.
func (a *Agent) Init() error {
	build := version.Get()
	agentLog().InfoS("memif-agent starting", "version", build.Version, "commit", build.Commit, "vppRelease", build.VPPRelease)
	return nil
}

// Close implements infra.Plugin.
func (a *Agent) Close() error { return nil }
