package benchmarks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	docker "github.com/fsouza/go-dockerclient"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

// nodeDevices is the agent's default device count: what a node advertises.
const nodeDevices = 256

// node is kubelet's real device manager and pod-resources server, a
// private dockerd, and the agent binary registered with that kubelet and
// watching that dockerd.
type node struct {
	ctx     context.Context
	kubelet *kubelettest.Kubelet
	docker  *docker.Client
	image   string
	agent   *agenttest.Agent
	api     memifv1.MemifAgentClient
}

func newNode(b *testing.B) *node {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	daemon := dockerd.Start(b)
	n := &node{ctx: ctx, docker: daemon.Client(b)}
	n.image = dockerd.ImportSleeperImage(b, n.docker)
	dir, err := os.MkdirTemp("", "br")
	if err != nil {
		b.Fatalf("create kubelet state directory: %v", err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	podResourcesSocket := filepath.Join(dir, "pod-resources.sock")
	if n.kubelet, err = kubelettest.Start(ctx, podResourcesSocket); err != nil {
		b.Fatalf("start kubelet: %v", err)
	}
	b.Cleanup(func() {
		if err := n.kubelet.Stop(); err != nil {
			b.Errorf("stop kubelet: %v", err)
		}
	})
	n.agent = newAgent(b, agenttest.Setup{
		DeviceCount:        nodeDevices,
		PluginDir:          kubelettest.PluginDir,
		PodResourcesSocket: podResourcesSocket,
		DockerEndpoint:     daemon.Endpoint(),
	})
	n.agent.Start()
	n.api = n.agent.APIClient()
	n.waitCapacity(b)
	return n
}

func (n *node) waitCapacity(b *testing.B) {
	b.Helper()
	ctx, cancel := context.WithTimeout(n.ctx, waitTimeout)
	defer cancel()
	if err := n.kubelet.WaitForCapacity(ctx, resource, nodeDevices); err != nil {
		b.Fatalf("agent did not register with kubelet: %v", err)
	}
}
