package deviceplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
	"github.com/contivpp/memif-agent/plugins/podmanager/podtracker"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	resource    = dmapi.DefaultResourceName
	deviceCount = 16
	// waitTimeout bounds every wait; it is a failure deadline, not an
	// asserted duration.
	waitTimeout = 30 * time.Second
)

// node is one node: the kubelet's device manager and pod-resources server,
// and the directories the agent keeps its state in.
type node struct {
	ctx                context.Context
	kubelet            *kubelettest.Kubelet
	podResourcesSocket string
	cfg                config.Config
}

// newNode starts the kubelet and prepares the agent's configuration: the
// default one, with its state in a fresh temporary directory.
func newNode(tb testing.TB) *node {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	// Short paths: unix socket paths must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "dp")
	if err != nil {
		tb.Fatalf("create state directory: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	n := &node{ctx: ctx, podResourcesSocket: filepath.Join(dir, "pod-resources.sock")}
	n.cfg = config.Default()
	n.cfg.DeviceCount = deviceCount
	n.cfg.SocketRoot = filepath.Join(dir, "memif")
	n.cfg.CheckpointPath = filepath.Join(dir, "checkpoint.json")
	if n.cfg.PluginDir+"/" != kubelettest.PluginDir {
		tb.Fatalf("the default plugin-dir %s is not the kubelet's %s", n.cfg.PluginDir, kubelettest.PluginDir)
	}
	n.kubelet, err = kubelettest.Start(ctx, n.podResourcesSocket)
	if err != nil {
		tb.Fatalf("start kubelet: %v", err)
	}
	tb.Cleanup(func() {
		if err := n.kubelet.Stop(); err != nil {
			tb.Errorf("stop kubelet: %v", err)
		}
	})
	return n
}

// agent is the agent's device manager on the real controller event loop,
// wired as the agent wires it; with its pod tracker when the test tracks
// pods.
type agent struct {
	loop    *eventloop.Loop
	dm      *manager.Manager
	metrics *prometheus.Registry
	// tracker and podResources, its kubelet client, are nil unless the
	// agent tracks pods.
	tracker      *podtracker.Tracker
	podResources *podresources.Client
}

// agentSetup is how a test runs the agent.
type agentSetup struct {
	// quiet drops the agent's warnings and errors (benchmarks).
	quiet bool
	// trackPods runs the pod tracker as the pod manager runs it on a node
	// with no container runtime (runtime: none): kubelet's pod-resources
	// alone tells which pods live, so a pod kubelet removes is released.
	// Without it no pod is ever bound nor released.
	trackPods bool
	// deviceHealth, when set, says whether the devices are healthy (the
	// agent gives the device manager the vswitch's health).
	deviceHealth dmapi.DeviceHealthSource
}

// loopLater forwards the tracker's events to the loop, which is made after
// the tracker: the device manager, a handler of the loop, lists pods
// through the tracker.
type loopLater struct{ loop *eventloop.Loop }

func (l *loopLater) PushEvent(event controllerapi.Event) error { return l.loop.PushEvent(event) }

// testLog passes warnings and errors to the test log; quiet drops them
// (benchmarks).
type testLog struct {
	tb    testing.TB
	quiet bool
}

func (testLog) Debugf(string, ...any) {}
func (testLog) Infof(string, ...any)  {}
func (l testLog) Warnf(format string, args ...any) {
	if !l.quiet {
		l.tb.Logf("WARN "+format, args...)
	}
}
func (l testLog) Errorf(format string, args ...any) {
	if !l.quiet {
		l.tb.Logf("ERROR "+format, args...)
	}
}

// startAgent starts the agent with cfg and waits until kubelet reports its
// devices. The agent is stopped at the end of the test unless stopped before.
func (n *node) startAgent(tb testing.TB, cfg config.Config) *agent {
	tb.Helper()
	a := n.startAgentWith(tb, cfg, agentSetup{})
	n.waitForCapacity(tb, int64(cfg.DeviceCount))
	// Capacity alone may be a stopped plugin's, which kubelet keeps for a
	// grace period: wait for this agent's own registration, and for its
	// startup resync (the checkpoint loaded), which runs on the event loop
	// meanwhile; resyncs run in order.
	poll.Until(tb, waitTimeout, "the agent registering with kubelet", func() error {
		if counterValue(tb, a.metrics, "memif_device_manager_registrations_total", "") < 1 {
			return errors.New("no registration counted yet")
		}
		return nil
	})
	if err := a.loop.Resync(n.ctx); err != nil {
		tb.Fatalf("resync after the start: %v", err)
	}
	return a
}

// startAgentWith starts the agent with cfg as setup says, and does not wait
// for kubelet. The agent is stopped at the end of the test unless stopped
// before.
func (n *node) startAgentWith(tb testing.TB, cfg config.Config, setup agentSetup) *agent {
	tb.Helper()
	log := testLog{tb: tb, quiet: setup.quiet}
	a := &agent{metrics: prometheus.NewRegistry()}
	opts := manager.Options{Log: log, Metrics: a.metrics, DeviceHealth: setup.deviceHealth}
	late := &loopLater{}
	if setup.trackPods {
		n.makeTracker(tb, a, late, log)
		opts.PodLister, opts.PodResolver = a.tracker, a.tracker
	}
	var err error
	if a.dm, err = manager.New(cfg, opts); err != nil {
		tb.Fatalf("device manager: %v", err)
	}
	a.loop, err = eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{
		Handlers:  []controllerapi.EventHandler{a.dm},
		Committer: fakevswitch.Committer{},
	})
	if err != nil {
		tb.Fatalf("event loop: %v", err)
	}
	late.loop = a.loop
	a.loop.Start()
	if err := a.dm.Start(a.loop); err != nil {
		a.loop.Close()
		tb.Fatalf("start device manager: %v", err)
	}
	if a.tracker != nil {
		a.tracker.Start()
	}
	tb.Cleanup(a.stop)
	return a
}

// makeTracker makes a's pod tracker over kubelet's pod-resources, with the
// pod manager's defaults (podmanager.conf); it pushes into loop once loop
// has one.
func (n *node) makeTracker(tb testing.TB, a *agent, loop *loopLater, log testLog) {
	tb.Helper()
	var err error
	if a.podResources, err = podresources.New(n.podResourcesSocket, podresources.DefaultCallTimeout); err != nil {
		tb.Fatalf("pod-resources client: %v", err)
	}
	tb.Cleanup(func() { a.podResources.Close() })
	a.tracker, err = podtracker.New(podtracker.Config{},
		podtracker.Deps{Kubelet: a.podResources, EventLoop: loop, Log: log})
	if err != nil {
		tb.Fatalf("pod tracker: %v", err)
	}
}

// stop stops the agent as its plugins' Close would; later calls do nothing.
func (a *agent) stop() {
	if a.loop == nil {
		return
	}
	if a.tracker != nil {
		a.tracker.Close()
	}
	a.dm.Stop()
	a.loop.Close()
	a.loop = nil
}

// stopAgent stops a and waits until kubelet has seen its plugin go (no
// device allocatable), as it has long before a restarted agent process
// registers again. Without the wait, kubelet could handle the old plugin's
// end after the new one's registration and hold the devices unhealthy.
func (n *node) stopAgent(tb testing.TB, a *agent) {
	tb.Helper()
	a.stop()
	n.waitForCapacity(tb, 0)
}

func (n *node) waitForCapacity(tb testing.TB, want int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(n.ctx, waitTimeout)
	defer cancel()
	if err := n.kubelet.WaitForCapacity(ctx, resource, want); err != nil {
		tb.Fatalf("agent's devices not back in kubelet: %v", err)
	}
}

// runContainers admits pod and returns what the runtime gets for each of
// its containers.
func (n *node) runContainers(tb testing.TB, pod *v1.Pod) map[string]*devicemanager.DeviceRunContainerOptions {
	tb.Helper()
	options, err := n.kubelet.AdmitPod(n.ctx, pod)
	if err != nil {
		tb.Fatalf("admit pod %s: %v", pod.Name, err)
	}
	return options
}

// memif is what one container got, as the runtime sees it.
type memif struct {
	envs        map[string]string
	annotations map[string]string
	mounts      map[string]string // container path -> host path
}

// memifOf reads the options; nil (what kubelet returns for a container
// without devices) gives an empty memif.
func memifOf(opts *devicemanager.DeviceRunContainerOptions) memif {
	m := memif{envs: map[string]string{}, annotations: map[string]string{}, mounts: map[string]string{}}
	if opts == nil {
		return m
	}
	for _, env := range opts.Envs {
		m.envs[env.Name] = env.Value
	}
	for _, annotation := range opts.Annotations {
		m.annotations[annotation.Name] = annotation.Value
	}
	for _, mount := range opts.Mounts {
		m.mounts[mount.ContainerPath] = mount.HostPath
	}
	return m
}
