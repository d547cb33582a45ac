package inprocess

import (
	"io"
	"slices"

	"github.com/ligato/cn-infra/infra"
	"github.com/ligato/cn-infra/logging"
	"github.com/ligato/cn-infra/logging/logrus"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/vswitch"
)

// PodSources stand in for the pod manager as the device manager's pod
// sources (Options.PodSources).
type PodSources struct {
	// LivePods decides which pods are alive; nil: nothing decides, and
	// the device manager releases no allocation for a pod gone. When it
	// has an Attach(controllerapi.EventLoop) method
	// (test/kit/fakepodtracker), it gets the agent's loop before the
	// agent starts, to push its decisions into as the pod tracker does.
	LivePods podapi.LivePodsSource
	// Resolver answers for a pod kubelet has just admitted; nil: none.
	Resolver podapi.PodResolver
}

// usePodSources makes sources the device manager's and leaves the pod
// manager out of the plugins started. After startOrder: through the pod
// manager's loop cn-infra finds the controller, and through its handlers
// the device manager before the memif wiring, which reads it in its Init.
func (a *Agent) usePodSources(sources PodSources) {
	a.DeviceManager.LivePods, a.DeviceManager.PodResolver = nil, nil
	if sources.LivePods != nil {
		a.DeviceManager.LivePods = sources.LivePods
		if attached, ok := sources.LivePods.(interface{ Attach(controllerapi.EventLoop) }); ok {
			attached.Attach(a.Controller)
		}
	}
	if sources.Resolver != nil {
		a.DeviceManager.PodResolver = sources.Resolver
	}
	a.plugins = slices.DeleteFunc(a.plugins, func(plugin infra.Plugin) bool { return plugin == infra.Plugin(a.PodManager) })
	a.PodManager = nil
}

// placeTestParts puts the test's parts opts gives beside or in place of
// the agent's, after startOrder: none is a plugin, and none may change
// the order cn-infra starts the plugins in.
func (a *Agent) placeTestParts(opts Options) {
	if opts.FirstHandler != nil {
		a.Controller.EventHandlers = append([]controllerapi.EventHandler{opts.FirstHandler}, a.Controller.EventHandlers...)
	}
	if opts.WrapVswitchScheduler != nil {
		a.VSwitch.KVScheduler = opts.WrapVswitchScheduler(a.VSwitch.KVScheduler)
	}
	if opts.VswitchLog != nil {
		a.VSwitch.Log = vswitchLogger(opts.VswitchLog)
	}
	if opts.Span != nil {
		a.MemifWiring.Span = opts.Span
	}
}

// vswitchLogger is a logger of the vswitch plugin's that writes to out at
// debug level. It is not in cn-infra's registry, so that logTo, which
// another agent of the process calls as it starts and stops, leaves it
// alone.
func vswitchLogger(out io.Writer) logging.PluginLogger {
	logger := logrus.NewLogger(vswitch.PluginName)
	logger.SetOutput(out)
	logger.SetLevel(logging.DebugLevel)
	return &logging.ParentLogger{Logger: logger, Prefix: vswitch.PluginName, Factory: logging.DefaultRegistry}
}
