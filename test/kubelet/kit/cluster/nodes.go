package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/test/kit/ociimage"
)

// NodeHost is what a suite reaches on one node of the cluster, the first
// (the Cluster itself, FirstNode) or an added one (Node): its name, its
// paths as this process sees them, programs in its namespaces, its
// containerd.
type NodeHost interface {
	// Name is the node's name (its Node object).
	Name() string
	// HostPath is where this process sees the node's nodePath.
	HostPath(nodePath string) string
	// NodeArgv is the command line that runs argv on the node.
	NodeArgv(argv ...string) []string
	// Ctr runs ctr against the node's containerd (namespace k8s.io).
	Ctr(ctx context.Context, args ...string) (string, error)
	// ImportImage imports an image archive into the node.
	ImportImage(ctx context.Context, archive string) error
	// ImportOCIImage writes img as an archive and imports it.
	ImportOCIImage(ctx context.Context, img ociimage.Image) error
}

// firstNode is the Cluster as the NodeHost of its first node.
type firstNode struct{ *Cluster }

func (firstNode) Name() string { return NodeName }

// FirstNode is the node Start brings up (NodeName), as a NodeHost.
func (c *Cluster) FirstNode() NodeHost { return firstNode{c} }

// AllNodes are the first node and the added ones, in order.
func (c *Cluster) AllNodes() []NodeHost {
	hosts := []NodeHost{c.FirstNode()}
	for _, n := range c.Nodes() {
		hosts = append(hosts, n)
	}
	return hosts
}

// Nodes are the nodes added to the first (Options.Nodes, AddNode), in
// order.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.added...)
}

// Node is a node added to the cluster (Options.Nodes or AddNode): a
// kubelet and containerd of its own, served by the cluster's control
// plane, in a mount namespace, a network namespace and under a cgroup root
// of its own, as the first node is (its node paths, /var/lib/kubelet and
// the agent's, are its own). Unlike the first node, which shares the
// host's network, it has its own network namespace (netns.go): its
// address on eth0, reached from the host through a veth, and its own
// loopback, where the API server's port is forwarded in. Its methods may
// be called from several goroutines.
type Node struct {
	c    *Cluster
	name string
	// dir holds its configs, containerd's root and state, and its node
	// paths (nodeRoot(dir)); its logs are in the cluster's log dir under
	// its name.
	dir     string
	ip      net.IP
	net     *netNamespace
	ns      *mountNamespace
	cgroups *cgroupRoot
	proxy   *apiProxy

	kubeletPort, healthzPort string

	mu         sync.Mutex
	containerd *process
	kubelet    *process

	stopOnce sync.Once
	stopErr  error
}

// addedNodeDirPrefix names the dirs of the added nodes in the work dir:
// n2, n3...; the path stays short, for the memif sockets under it.
const addedNodeDirPrefix = "n"

// addNodes adds nodes until the cluster has Options.Nodes.
func (c *Cluster) addNodes(ctx context.Context) error {
	for len(c.Nodes())+1 < c.opts.Nodes {
		begin := time.Now()
		n, err := c.AddNode(ctx)
		if err != nil {
			return err
		}
		c.progress("cluster: node %s Ready at %s (%.1fs)", n.Name(), n.IP(), time.Since(begin).Seconds())
	}
	return nil
}

// AddNode starts one more node (memif-node-2, memif-node-3...) and
// returns once it is Ready and schedulable. On error what it started is
// stopped with the cluster.
func (c *Cluster) AddNode(ctx context.Context) (*Node, error) {
	c.mu.Lock()
	// The first index whose dir is free: a removed node's name and dir
	// are not reused.
	index := 2
	dir := filepath.Join(c.dir, addedNodeDirPrefix+strconv.Itoa(index))
	for {
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			c.mu.Unlock()
			return nil, fmt.Errorf("cluster: create %s: %w", dir, err)
		}
		index++
		dir = filepath.Join(c.dir, addedNodeDirPrefix+strconv.Itoa(index))
	}
	n := &Node{c: c, name: fmt.Sprintf("%s-%d", NodeName, index), dir: dir}
	c.added = append(c.added, n)
	c.mu.Unlock()
	if err := n.start(ctx, index); err != nil {
		return nil, fmt.Errorf("cluster: node %s: %w", n.name, err)
	}
	return n, nil
}

func (n *Node) start(ctx context.Context, index int) error {
	steps := []struct {
		what string
		run  func(context.Context) error
	}{
		{"namespaces and cgroups", func(context.Context) error { return n.prepare(index) }},
		{"containerd", n.startContainerd},
		{"pause image", func(ctx context.Context) error {
			img, err := ociimage.PauseImage(PauseImage)
			if err != nil {
				return err
			}
			return n.ImportOCIImage(ctx, img)
		}},
		{"kubelet", n.startKubelet},
		{"Ready and schedulable", n.waitSchedulable},
	}
	for _, step := range steps {
		if err := step.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", step.what, err)
		}
	}
	return nil
}

func (n *Node) prepare(index int) error {
	if err := os.MkdirAll(n.logDir(), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", n.logDir(), err)
	}
	for _, d := range []string{"containerd", "cni"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	n.kubeletPort, n.healthzPort = ports[0], ports[1]
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("pick the node address: %w", err)
	}
	n.ip = net.IPv4(100, 64|(b[0]&0x3f), b[1], b[2]|1)
	link := fmt.Sprintf("%.12sn%d", n.c.bridge, index)
	if n.net, err = newNetNamespace(n.logDir(), link, n.ip); err != nil {
		return err
	}
	if n.proxy, err = newAPIProxy(n.net, "127.0.0.1:"+n.c.apiPort); err != nil {
		return err
	}
	if n.ns, err = newMountNamespace(n.logDir(), nodeRoot(n.dir)); err != nil {
		return err
	}
	// Under the first node's cgroup root: the cluster's cgroups are one
	// tree, which Stop and a later Start's reaping (stale.go) clear whole.
	n.cgroups, err = newCgroupRoot(filepath.Base(n.c.dir) + "/" + n.name)
	return err
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// IP is the node's address (kubelet's InternalIP, the agent's pod IP).
func (n *Node) IP() string { return n.ip.String() }

// LogPath is the log file of the node's containerd or kubelet.
func (n *Node) LogPath(peer string) string { return filepath.Join(n.logDir(), peer+".log") }

func (n *Node) logDir() string { return filepath.Join(n.c.logDir(), n.name) }

// HostPath is where this process sees what the node has at nodePath.
func (n *Node) HostPath(nodePath string) string {
	if n.ns == nil {
		return nodePath
	}
	return n.ns.hostPath(nodePath)
}

// NodeArgv returns the command line that runs argv on the node: in its
// network and mount namespaces. Its pid is argv's own.
func (n *Node) NodeArgv(argv ...string) []string { return n.net.argv(n.ns.argv(argv...)...) }

// DialContext connects from inside the node's network namespace, as a
// program of the node does (to the agent's loopback HTTP port, say).
func (n *Node) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return n.net.DialContext(ctx, network, address)
}

// RuntimeSocket is the node's containerd socket as this process reaches
// it.
func (n *Node) RuntimeSocket() string { return n.HostPath(nodeRuntimeSocket) }

// Ctr runs ctr against the node's containerd in the k8s.io namespace.
func (n *Node) Ctr(ctx context.Context, args ...string) (string, error) {
	return runCtr(ctx, n, n.c.ctrBinary(), n.name, args)
}

// ImportImage imports an image archive into the node.
func (n *Node) ImportImage(ctx context.Context, archive string) error {
	return importImage(ctx, n, archive)
}

// ImportOCIImage writes img as an archive in the node's dir and imports
// it.
func (n *Node) ImportOCIImage(ctx context.Context, img ociimage.Image) error {
	return importOCIImage(ctx, n, n.dir, img)
}

// startContainerd writes the node's containerd and CNI config, as the
// first node's with its own paths, and starts it. The pods' bridge is in
// the node's network namespace: the same name as the first node's does not
// meet it.
func (n *Node) startContainerd(ctx context.Context) error {
	if err := writeRuntimeConfig(n.dir, n.RuntimeSocket(), n.c.bridge, n.c.opts.Runtime); err != nil {
		return err
	}
	return n.runContainerd(ctx)
}

func (n *Node) runContainerd(ctx context.Context) error {
	path := "PATH=" + filepath.Dir(n.c.containerdBinary()) + ":" + os.Getenv("PATH")
	p, err := startProcess(n.logDir(), "containerd", []string{path},
		n.NodeArgv(n.c.containerdBinary(), "--config", filepath.Join(n.dir, "containerd", "config.toml"))...)
	if err != nil {
		return err
	}
	n.setProcess(&n.containerd, p)
	return n.c.waitFor(ctx, p, func() error {
		_, err := n.Ctr(ctx, "version")
		return err
	})
}

func (n *Node) startKubelet(ctx context.Context) error {
	pki := n.c.pki
	cert, key, err := pki.issue("kubelet-serving-"+n.name, n.name, nil, true, n.ip)
	if err != nil {
		return err
	}
	clientCert, clientKey, err := pki.issue("kubelet-"+n.name, "system:node:"+n.name, []string{"system:nodes"}, false)
	if err != nil {
		return err
	}
	config := kubeconfig{Server: n.c.Server(), CAFile: pki.caFile(), User: "system:node:" + n.name, CertFile: clientCert, KeyFile: clientKey}
	if err := config.write(n.kubeconfig()); err != nil {
		return err
	}
	err = writeTemplate(filepath.Join(n.dir, "kubelet.yaml"), kubeletTemplate, map[string]string{
		"Address":       n.IP(),
		"Port":          n.kubeletPort,
		"HealthzPort":   n.healthzPort,
		"Cert":          cert,
		"Key":           key,
		"CA":            pki.caFile(),
		"RuntimeSocket": n.RuntimeSocket(),
		"CgroupRoot":    "/" + n.cgroups.name,
	}, 0o600)
	if err != nil {
		return err
	}
	return n.runKubelet(ctx)
}

func (n *Node) kubeconfig() string { return filepath.Join(n.dir, "kubelet.kubeconfig") }

// runKubelet starts kubelet in the node's namespaces and waits for its
// health endpoint on the node's loopback.
func (n *Node) runKubelet(ctx context.Context) error {
	p, err := startProcess(n.logDir(), "kubelet", nil, n.NodeArgv(filepath.Join(n.c.opts.Peers.Kubernetes, "kubelet"),
		"--config="+filepath.Join(n.dir, "kubelet.yaml"),
		"--kubeconfig="+n.kubeconfig(),
		"--hostname-override="+n.name, "--node-ip="+n.IP())...)
	if err != nil {
		return err
	}
	n.setProcess(&n.kubelet, p)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: n.DialContext}}
	defer client.CloseIdleConnections()
	url := "http://127.0.0.1:" + n.healthzPort + "/healthz"
	return n.c.waitFor(ctx, p, func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s in node %s: %s", url, n.name, resp.Status)
		}
		return nil
	})
}

// waitSchedulable waits until the node is Ready and has no taints.
func (n *Node) waitSchedulable(ctx context.Context) error {
	client, err := n.c.Clientset()
	if err != nil {
		return err
	}
	return n.c.waitFor(ctx, n.kubeletProcess(), func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready := false
		for _, cond := range node.Status.Conditions {
			if cond.Type == v1.NodeReady {
				if cond.Status != v1.ConditionTrue {
					return fmt.Errorf("node %s not Ready: %s", n.name, cond.Message)
				}
				ready = true
			}
		}
		if !ready {
			return fmt.Errorf("node %s has no Ready condition yet", n.name)
		}
		if len(node.Spec.Taints) > 0 {
			return fmt.Errorf("node %s has taints %v", n.name, node.Spec.Taints)
		}
		return nil
	})
}

// RestartKubelet stops the node's kubelet (SIGTERM) and starts it again;
// it returns once kubelet serves its health endpoint. Pods stay.
func (n *Node) RestartKubelet(ctx context.Context) error {
	if err := n.kubeletProcess().stop(); err != nil {
		return fmt.Errorf("cluster: node %s: %w", n.name, err)
	}
	if err := n.runKubelet(ctx); err != nil {
		return fmt.Errorf("cluster: node %s: restart kubelet: %w", n.name, err)
	}
	return nil
}

// RestartContainerd stops the node's containerd and starts it again; it
// returns once containerd answers. Containers keep running under their
// shims.
func (n *Node) RestartContainerd(ctx context.Context) error {
	n.mu.Lock()
	p := n.containerd
	n.mu.Unlock()
	if err := p.stop(); err != nil {
		return fmt.Errorf("cluster: node %s: %w", n.name, err)
	}
	if err := n.runContainerd(ctx); err != nil {
		return fmt.Errorf("cluster: node %s: restart containerd: %w", n.name, err)
	}
	return nil
}

func (n *Node) kubeletProcess() *process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.kubelet
}

func (n *Node) setProcess(slot **process, p *process) {
	n.mu.Lock()
	defer n.mu.Unlock()
	*slot = p
}

// Stop stops the node's kubelet, kills its pods, stops its containerd and
// shims, and removes its namespaces and cgroups; its Node object stays in
// the API (NotReady in time), as a machine switched off. Safe to call
// more than once; the cluster's Stop stops every added node first.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { n.stopErr = n.stop() })
	return n.stopErr
}

func (n *Node) stop() error {
	n.mu.Lock()
	kubelet, containerd := n.kubelet, n.containerd
	n.mu.Unlock()
	var errs []error
	errs = append(errs, kubelet.stop())
	if n.cgroups != nil {
		n.cgroups.kill()
	}
	errs = append(errs, containerd.stop())
	killShims(n.RuntimeSocket())
	errs = append(errs, n.proxy.close())
	if n.ns != nil {
		n.ns.close()
	}
	if n.net != nil {
		n.net.close()
	}
	if n.cgroups != nil {
		errs = append(errs, n.cgroups.remove())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	return nil
}

// Remove takes the node out of the cluster as an operator does with a
// machine: Stop, then its Node object deleted. The cluster no longer
// lists it (Nodes, AllNodes); the control plane forgets what was bound to
// it (the pod garbage collector its pods, the garbage collector what the
// Node owns).
func (n *Node) Remove(ctx context.Context) error {
	if err := n.Stop(); err != nil {
		return err
	}
	client, err := n.c.Clientset()
	if err != nil {
		return err
	}
	if err := client.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("cluster: delete node %s: %w", n.name, err)
	}
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	n.c.added = slices.DeleteFunc(n.c.added, func(added *Node) bool { return added == n })
	return nil
}

// stopNodes stops the added nodes, last first.
func (c *Cluster) stopNodes() error {
	nodes := c.Nodes()
	var errs []error
	for i := len(nodes) - 1; i >= 0; i-- {
		errs = append(errs, nodes[i].Stop())
	}
	return errors.Join(errs...)
}

// reapNodes kills the shims of the added nodes of the stale cluster in
// dir; their pods are in its cgroup tree, which reap kills.
func reapNodes(dir string) {
	nodes, _ := filepath.Glob(filepath.Join(dir, addedNodeDirPrefix+"[0-9]*"))
	for _, node := range nodes {
		killShims((&mountNamespace{root: nodeRoot(node)}).hostPath(nodeRuntimeSocket))
	}
}
