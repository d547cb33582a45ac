// Command memif-agent is the node agent that gives Kubernetes pods memif
// interfaces to a userspace vswitch. It serves kubelet's device plugin API
// for contivpp.io/memif and runs every state change through one controller
// event loop; see the README for the flows and the configuration.
package main

import (
	"fmt"
	"os"

	"github.com/contivpp/memif-agent/plugins/controller"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/ligato/cn-infra/agent"
	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/health/probe"
	"github.com/ligato/cn-infra/health/statuscheck"
	"github.com/ligato/cn-infra/logging"
	"github.com/ligato/cn-infra/logging/logmanager"
	"github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"
	"github.com/namsral/flag"
)

func main() {
	flag.Usage = printUsage
	memifAgent := newMemifAgent()
	if err := agent.NewAgent(agent.AllPlugins(memifAgent)).Run(); err != nil {
		fmt.Fprintln(os.Stderr, "memif-agent:", err)
		os.Exit(1)
	}
}

func printUsage() {
	out := os.Stderr
	fmt.Fprint(out, `memif-agent gives Kubernetes pods memif interfaces to a userspace vswitch.

It registers the extended resource contivpp.io/memif with kubelet, answers
Allocate with a per-pod socket directory and secret, tracks which pod holds
which memif, and releases them when the pod goes away.

Every plugin reads a YAML config file (-<plugin>-config, looked up in
-config-dir); a missing file means the plugin's defaults. Each flag can also
be set with the environment variable named in its description.

Usage: memif-agent [flags]

Flags:
`)
	flag.CommandLine.PrintDefaults()
}

// memifAgent lists the agent's plugins. cn-infra initializes the fields in
// order, so the order below is the start order; the controller's
// EventHandlers list is the order in which events visit the handlers.
type memifAgent struct {
	LogManager  *logmanager.Plugin
	HTTP        *rest.Plugin
	StatusCheck *statuscheck.Plugin
	Probe       *probe.Plugin
	Prometheus  *prometheus.Plugin
	KVScheduler *kvscheduler.Scheduler
	Controller  *controller.Plugin
}

func newMemifAgent() *memifAgent {
	httpServer := rest.NewPlugin(rest.UseDeps(func(deps *rest.Deps) {
		deps.Cfg = loopbackByDefault{config.ForPlugin("http", config.WithExtraFlags(func(flags *config.FlagSet) {
			flags.String("http-port", rest.DefaultHTTPPort,
				"Port of the HTTP server (probes, metrics, event history); it listens on 127.0.0.1 unless http.conf sets another endpoint")
		}))}
	}))
	statusCheck := statuscheck.NewPlugin()
	metrics := prometheus.NewPlugin(prometheus.UseDeps(func(deps *prometheus.Deps) {
		deps.HTTP = httpServer
	}))
	healthProbe := probe.NewPlugin(probe.UseDeps(func(deps *probe.Deps) {
		deps.HTTP = httpServer
		deps.StatusCheck = statusCheck
		deps.Prometheus = metrics
	}))
	logManager := logmanager.NewPlugin(logmanager.UseDeps(func(deps *logmanager.Deps) {
		deps.HTTP = httpServer
	}))
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) {
		deps.HTTPHandlers = httpServer
	}))
	eventLoop := controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
		deps.KVScheduler = scheduler
		deps.HTTPHandlers = httpServer
		deps.StatusCheck = statusCheck
		deps.Prometheus = metrics
		deps.EventHandlers = []controllerapi.EventHandler{}
	}))
	return &memifAgent{
		LogManager:  logManager,
		HTTP:        httpServer,
		StatusCheck: statusCheck,
		Probe:       healthProbe,
		Prometheus:  metrics,
		KVScheduler: scheduler,
		Controller:  eventLoop,
	}
}

// String implements infra.Plugin.
func (a *memifAgent) String() string { return "memif-agent" }

// Init implements infra.Plugin.
func (a *memifAgent) Init() error {
	logging.DefaultLogger.Info("memif-agent starting")
	return nil
}

// Close implements infra.Plugin.
func (a *memifAgent) Close() error { return nil }
