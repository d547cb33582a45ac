package deviceplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/inprocess"
	dmplugin "github.com/contivpp/memif-agent/plugins/devicemanager"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/podmanager"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
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
	n.cfg.DeviceInfoDir = filepath.Join(dir, "devinfo")
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

// agent is the agent in the test's process (inprocess), on the node's
// kubelet: its device plugin registers with kubelet's device manager.
type agent struct {
	*inprocess.Agent
	// pluginSocket is where its device plugin serves kubelet.
	pluginSocket string
}

// agentSetup is how a test runs the agent beside its device manager's
// config.
type agentSetup struct {
	// trackPods has the pod manager list kubelet's pod-resources
	// (runtime: none), as on a node with no container runtime, so that
	// the agent binds the pods kubelet admits and releases those it
	// removes. Without it no pod source answers (Docker at a socket that
	// does not exist): no pod is ever bound nor released.
	trackPods bool
	// reachability, when set, says whether the vswitch answers: the
	// devices' health follows it.
	reachability vswitchapi.VswitchAPI
}

// trackEvery is how often the agent's pod tracker compares kubelet's pods
// with those it announced: well within kubelet's pod-resources rate limit
// (100 calls a second), so that a removed pod is released soon.
const trackEvery = 50 * time.Millisecond

// startAgent starts the agent with cfg and waits until kubelet reports its
// devices. The agent is stopped at the end of the test unless stopped before.
func (n *node) startAgent(tb testing.TB, cfg config.Config) *agent {
	tb.Helper()
	a := n.startAgentWith(tb, cfg, agentSetup{})
	n.waitForCapacity(tb, int64(cfg.DeviceCount))
	// Capacity alone may be a stopped plugin's, which kubelet keeps for a
	// grace period: wait for this agent's own registration.
	poll.Until(tb, waitTimeout, "the agent registering with kubelet", func() error {
		if counterValue(tb, a.Metrics, "memif_device_manager_registrations_total", "") < 1 {
			return errors.New("no registration counted yet")
		}
		return nil
	})
	return a
}

// startAgentWith starts the agent with cfg as setup says, and does not wait
// for kubelet. The agent is stopped at the end of the test unless stopped
// before.
func (n *node) startAgentWith(tb testing.TB, cfg config.Config, setup agentSetup) *agent {
	tb.Helper()
	pods := podmanager.DefaultConfig()
	pods.ReconcilePeriod = configfile.Duration(trackEvery)
	if setup.trackPods {
		pods.Runtime, pods.PodResourcesSocket = podmanager.RuntimeNone, n.podResourcesSocket
	} else {
		pods.Runtime, pods.PodResourcesSocket = podmanager.RuntimeDocker, ""
		pods.DockerEndpoint = "unix://" + filepath.Join(filepath.Dir(n.podResourcesSocket), "no-docker.sock")
	}
	return &agent{
		Agent: inprocess.Start(tb, inprocess.Options{
			Configs:      map[string]any{dmplugin.PluginName: cfg, podmanager.PluginName: pods},
			Reachability: setup.reachability,
		}),
		pluginSocket: cfg.PluginSocketPath(),
	}
}

// stopAgent stops a and waits until kubelet has seen its plugin go (no
// device allocatable), as it has long before a restarted agent process
// registers again. Without the wait, kubelet could handle the old plugin's
// end after the new one's registration and hold the devices unhealthy.
func (n *node) stopAgent(tb testing.TB, a *agent) {
	tb.Helper()
	a.Stop()
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
