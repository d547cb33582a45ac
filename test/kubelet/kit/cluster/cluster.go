package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/contivpp/memif-agent/test/kit/ociimage"
	"github.com/contivpp/memif-agent/test/kit/program"
)

// Runtime selects the node's container runtime.
type Runtime string

const (
	// Containerd is containerd 2.x as scripts/peers.sh builds it.
	Containerd Runtime = "containerd"
	// DebianContainerd is Debian 12's containerd 1.6 (/usr/bin), the
	// old-runtime case. containerd 1.6 has no CDI: a DRA driver's devices
	// cannot reach its containers.
	DebianContainerd Runtime = "debian-containerd"
	// Containerd17 is containerd 1.7 as scripts/peers.sh containerd17
	// builds it, with the CRI's CDI on (enable_cdi, off by default in
	// 1.7) over the spec dirs 2.x reads: the oldest containerd a DRA
	// driver's devices reach.
	Containerd17 Runtime = "containerd17"
)

// NodeName is the name the node registers as.
const NodeName = "memif-node"

// PauseImage is the sandbox image every cluster imports before kubelet
// starts (ociimage.PauseImage), so no pod needs a registry.
const PauseImage = "docker.io/library/pause:memif-test"

// Runc and CNIBinDir are Debian's runc and CNI plugins
// (scripts/install-deps.sh installs them).
const (
	Runc      = "/usr/sbin/runc"
	CNIBinDir = "/usr/lib/cni"
)

// readyTimeout bounds each start step: a peer that is not up by then will
// not come up.
const readyTimeout = 3 * time.Minute

// Options configure Start. The zero value runs containerd 2.x with the
// peers of scripts/peers.sh and a work dir under the temp dir.
type Options struct {
	// Peers are the binaries; empty fields are filled by BuildPeers.
	Peers Peers
	// Runtime is the node's container runtime (default Containerd).
	Runtime Runtime
	// Progress gets one line per start step; nil discards them.
	Progress io.Writer
	// OwnSignals says the caller handles SIGINT and SIGTERM itself (and
	// calls Stop); otherwise the cluster stops on them and exits.
	OwnSignals bool
	// Nodes is how many nodes the cluster has (default 1): the first,
	// then Nodes-1 added ones (AddNode, nodes.go), each Ready before Start
	// returns.
	Nodes int
	// ControlPlaneOnly runs etcd, kube-apiserver, kube-controller-manager
	// and kube-scheduler without a node: for what talks to the API server
	// alone (Node objects a test creates itself stand for nodes). Nodes
	// and the node's methods (HostPath, Ctr, NodeArgv...) do not apply.
	ControlPlaneOnly bool
}

// Cluster is a running single-node cluster. Its methods may be called from
// several goroutines.
type Cluster struct {
	opts    Options
	dir     string
	pki     *pki
	ns      *mountNamespace
	cgroups *cgroupRoot
	bridge  string
	nodeIP  net.IP

	etcdPort, apiPort, kubeletPort, healthzPort string
	// apiserverArgv is kube-apiserver's command line, kept for its
	// restarts.
	apiserverArgv []string

	mu         sync.Mutex
	etcd       *process
	apiserver  *process
	controller *process
	scheduler  *process
	containerd *process
	kubelet    *process
	// added are the nodes added to the first (nodes.go).
	added []*Node

	stopOnce  sync.Once
	stopErr   error
	interrupt chan os.Signal
	done      chan struct{}
	watcher   sync.WaitGroup
}

// Start brings up etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd and kubelet, and returns once the node is
// Ready. On error nothing is left running. Stop it with Stop; a SIGINT or
// SIGTERM to the process stops it too, then exits with status 1, unless
// Options.OwnSignals.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("cluster: a node runs containerd and kubelet, which need root; run as root")
	}
	if opts.Runtime == "" {
		opts.Runtime = Containerd
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Peers.Kubernetes == "" || opts.Peers.Etcd == "" || opts.Peers.Containerd == "" {
		peers, err := BuildPeers()
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		opts.Peers.Kubernetes, opts.Peers.Etcd, opts.Peers.Containerd = peers.Kubernetes, peers.Etcd, peers.Containerd
	}
	if opts.Runtime == Containerd17 && opts.Peers.Containerd17 == "" {
		dir, err := BuildContainerd17()
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		opts.Peers.Containerd17 = dir
	}
	// A short path: memif sockets live under it, and a Unix socket's path
	// has at most 107 bytes.
	reapStale()
	dir, err := os.MkdirTemp("", workDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("cluster: create the work dir: %w", err)
	}
	if err := writeOwner(dir); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{opts: opts, dir: dir, bridge: bridgeName(dir), done: make(chan struct{})}
	if !opts.OwnSignals {
		c.watchSignals()
	}
	if err := c.start(ctx); err != nil {
		stopErr := c.Stop()
		return nil, errors.Join(fmt.Errorf("cluster: %w", err), stopErr)
	}
	return c, nil
}

func (c *Cluster) progress(format string, args ...any) {
	fmt.Fprintf(c.opts.Progress, format+"\n", args...)
}

// watchSignals stops the cluster on SIGINT or SIGTERM, so an interrupted
// test or demo leaves nothing behind.
func (c *Cluster) watchSignals() {
	c.interrupt = make(chan os.Signal, 1)
	signal.Notify(c.interrupt, syscall.SIGINT, syscall.SIGTERM)
	c.watcher.Add(1)
	go func() {
		defer c.watcher.Done()
		select {
		case sig := <-c.interrupt:
			fmt.Fprintf(os.Stderr, "cluster: %v: stopping the cluster in %s\n", sig, c.dir)
			go func() { _ = c.Stop() }()
			<-c.done
			os.Exit(1)
		case <-c.done:
		}
	}()
}

func (c *Cluster) start(ctx context.Context) error {
	steps := []startStep{
		{"certificates and kubeconfigs", c.writeConfig},
		{"etcd " + version(c.opts.Peers.Etcd), c.startEtcd},
		{"kube-apiserver " + version(c.opts.Peers.Kubernetes), c.startAPIServer},
		{"kube-controller-manager and kube-scheduler", c.startControllers},
	}
	if !c.opts.ControlPlaneOnly {
		steps = append(steps, c.nodeSteps()...)
	}
	for _, step := range steps {
		begin := time.Now()
		if err := step.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", step.what, err)
		}
		c.progress("cluster: %s (%.1fs)", step.what, time.Since(begin).Seconds())
	}
	return nil
}

// startStep is one step of Start.
type startStep struct {
	what string
	run  func(context.Context) error
}

// nodeSteps start the first node and the added ones.
func (c *Cluster) nodeSteps() []startStep {
	return []startStep{
		{"node mount namespace and cgroups", c.prepareNode},
		{string(c.opts.Runtime) + " " + c.RuntimeVersion(), c.startContainerd},
		{"pause image", c.importPause},
		{"kubelet", c.startKubelet},
		{"node " + NodeName + " Ready", c.WaitNodeReady},
		{"node untainted, default service account", c.waitSchedulable},
		{"added nodes", c.addNodes},
	}
}

// Dir is the cluster's work dir: certificates, kubeconfigs, configs, logs
// (Dir/logs/<peer>.log) and the node's state.
func (c *Cluster) Dir() string { return c.dir }

// LogPath is the log file of a peer: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd or kubelet.
func (c *Cluster) LogPath(peer string) string { return filepath.Join(c.dir, "logs", peer+".log") }

// Kubeconfig is the path of a cluster-admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.dir, "admin.kubeconfig") }

// Server is the API server's URL.
func (c *Cluster) Server() string { return "https://127.0.0.1:" + c.apiPort }

// RuntimeSocket is containerd's socket (CRI and containerd's own API), as
// this process reaches it: the node's /run/containerd/containerd.sock, where
// a DaemonSet finds it on a real node (the agent's podmanager.conf runtime
// auto reads the pods' annotations there).
func (c *Cluster) RuntimeSocket() string {
	return c.HostPath(nodeRuntimeSocket)
}

// nodeRuntimeSocket is containerd's socket on the node.
const nodeRuntimeSocket = "/run/containerd/containerd.sock"

// nodeRoot holds the node paths of the cluster with work dir dir.
func nodeRoot(dir string) string { return filepath.Join(dir, "node") }

// HostPath is where this process sees what the node (containerd, kubelet,
// the pods' host paths) has at nodePath: the node's /var/lib/kubelet,
// /run/contiv, /var/lib/memif-agent and the other private paths live in the
// work dir.
func (c *Cluster) HostPath(nodePath string) string {
	if c.ns == nil {
		return nodePath
	}
	return c.ns.hostPath(nodePath)
}

// NodeArgv returns the command line that runs argv on the node: in its
// mount namespace, where the node paths (HostPath) are the node's. A
// program started with it (VPP, which creates the memif sockets the agent
// names) sees what the agent and the pods see; its pid is argv's own.
func (c *Cluster) NodeArgv(argv ...string) []string { return c.ns.argv(argv...) }

// Clientset returns a client of the API server as cluster-admin. It
// carries the certificates (Kubeconfig embeds them), so it starts no
// goroutine that outlives the cluster.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	config, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("cluster: load %s: %w", c.Kubeconfig(), err)
	}
	return kubernetes.NewForConfig(config)
}

// Kubectl runs kubectl against the cluster and returns its combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.opts.Peers.Kubernetes, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Ctr runs ctr against the node's containerd in the k8s.io namespace (the
// CRI's) and returns its combined output. It runs in the node's mount
// namespace, so `ctr run` finds the FIFOs it makes; a path in args is one
// of the node (the work dir is the same on both).
func (c *Cluster) Ctr(ctx context.Context, args ...string) (string, error) {
	return runCtr(ctx, c, c.ctrBinary(), NodeName, args)
}

// ImportImage imports an image archive (OCI layout or docker save) into
// the node, where pods find it without a registry.
func (c *Cluster) ImportImage(ctx context.Context, archive string) error {
	return importImage(ctx, c, archive)
}

// ImportOCIImage writes img as an archive in the work dir and imports it.
func (c *Cluster) ImportOCIImage(ctx context.Context, img ociimage.Image) error {
	return importOCIImage(ctx, c, c.dir, img)
}

// Versions names each peer's version, for a demo's header.
func (c *Cluster) Versions() map[string]string {
	runc, _ := exec.Command(Runc, "--version").Output()
	runcVersion, _, _ := strings.Cut(string(runc), "\n")
	return map[string]string{
		"kubernetes": version(c.opts.Peers.Kubernetes),
		"etcd":       version(c.opts.Peers.Etcd),
		"runtime":    string(c.opts.Runtime) + " " + c.RuntimeVersion(),
		"runc":       strings.TrimPrefix(runcVersion, "runc version "),
	}
}

// RuntimeVersion is containerd's version as it reports it.
func (c *Cluster) RuntimeVersion() string {
	out, err := exec.Command(c.containerdBinary(), "--version").Output()
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return strings.TrimSpace(string(out))
	}
	return fields[2]
}

// containerdDir holds the runtime's containerd, shim and ctr.
func (c *Cluster) containerdDir() string {
	switch c.opts.Runtime {
	case DebianContainerd:
		return "/usr/bin"
	case Containerd17:
		return c.opts.Peers.Containerd17
	default:
		return c.opts.Peers.Containerd
	}
}

func (c *Cluster) containerdBinary() string {
	return filepath.Join(c.containerdDir(), "containerd")
}

func (c *Cluster) ctrBinary() string {
	return filepath.Join(c.containerdDir(), "ctr")
}

func (c *Cluster) writeConfig(context.Context) error {
	for _, d := range []string{"logs", "containerd", "cni"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	var err error
	if c.pki, err = newPKI(filepath.Join(c.dir, "pki")); err != nil {
		return err
	}
	ports, err := FreePorts(4)
	if err != nil {
		return err
	}
	c.etcdPort, c.apiPort, c.kubeletPort, c.healthzPort = ports[0], ports[1], ports[2], ports[3]
	clients := []struct{ file, name, cn, org string }{
		{"admin.kubeconfig", "admin", "memif-admin", "system:masters"},
		{"controller-manager.kubeconfig", "controller-manager", "system:kube-controller-manager", ""},
		{"scheduler.kubeconfig", "scheduler", "system:kube-scheduler", ""},
		{"kubelet.kubeconfig", "kubelet", "system:node:" + NodeName, "system:nodes"},
	}
	for _, client := range clients {
		var orgs []string
		if client.org != "" {
			orgs = []string{client.org}
		}
		cert, key, err := c.pki.issue(client.name, client.cn, orgs, false)
		if err != nil {
			return err
		}
		config := kubeconfig{Server: c.Server(), CAFile: c.pki.caFile(), User: client.cn, CertFile: cert, KeyFile: key}
		if err := config.write(filepath.Join(c.dir, client.file)); err != nil {
			return err
		}
	}
	return nil
}

// FreePorts returns n free loopback ports (loopback.Ports). Every cluster
// runs on the host's network, so whatever a test runs with host networking
// must take its ports from here rather than a fixed number.
func FreePorts(n int) ([]string, error) { return loopback.Ports(n) }

func (c *Cluster) startEtcd(ctx context.Context) error {
	peerPorts, err := FreePorts(1)
	if err != nil {
		return err
	}
	client, peer := "http://127.0.0.1:"+c.etcdPort, "http://127.0.0.1:"+peerPorts[0]
	p, err := startProcess(c.logDir(), "etcd", nil, filepath.Join(c.opts.Peers.Etcd, "etcd"),
		"--name=node", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=node="+peer, "--log-level=warn", "--unsafe-no-fsync")
	if err != nil {
		return err
	}
	c.setProcess(&c.etcd, p)
	return c.waitHTTP(ctx, p, client+"/health", nil)
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	serving, servingKey, err := c.pki.issue("apiserver", "kube-apiserver", nil, true)
	if err != nil {
		return err
	}
	kubeletClient, kubeletClientKey, err := c.pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, false)
	if err != nil {
		return err
	}
	saKey, saPub, err := c.pki.serviceAccountKey()
	if err != nil {
		return err
	}
	c.apiserverArgv = []string{filepath.Join(c.opts.Peers.Kubernetes, "kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:" + c.etcdPort,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + c.apiPort,
		"--tls-cert-file=" + serving, "--tls-private-key-file=" + servingKey,
		"--client-ca-file=" + c.pki.caFile(),
		"--kubelet-client-certificate=" + kubeletClient, "--kubelet-client-key=" + kubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP",
		"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--profiling=false"}
	return c.runAPIServer(ctx)
}

// runAPIServer starts kube-apiserver with the command line startAPIServer
// made (its certificates and keys issued once, so that what was signed
// with them, service account tokens included, stays valid across a
// restart) and waits until it answers /readyz.
func (c *Cluster) runAPIServer(ctx context.Context) error {
	p, err := startProcess(c.logDir(), "kube-apiserver", nil, c.apiserverArgv...)
	if err != nil {
		return err
	}
	c.setProcess(&c.apiserver, p)
	adminCert, err := tls.LoadX509KeyPair(filepath.Join(c.pki.dir, "admin.crt"), filepath.Join(c.pki.dir, "admin.key"))
	if err != nil {
		return fmt.Errorf("load the admin certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.pki.caCert)
	tlsConfig := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{adminCert}}
	return c.waitHTTP(ctx, p, c.Server()+"/readyz", tlsConfig)
}

// waitHTTP waits until url answers 200, or p exits.
func (c *Cluster) waitHTTP(ctx context.Context, p *process, url string, tlsConfig *tls.Config) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer client.CloseIdleConnections()
	var last error
	return c.waitFor(ctx, p, func() error {
		resp, err := client.Get(url)
		if err != nil {
			last = err
			return last
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
			return last
		}
		return nil
	})
}

// waitFor calls check every 200ms until it returns nil, p exits, ctx ends
// or readyTimeout passes.
func (c *Cluster) waitFor(ctx context.Context, p *process, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		if p != nil {
			if exit := p.Running(); exit != nil {
				return exit
			}
		}
		select {
		case <-ctx.Done():
			tail := ""
			if p != nil {
				tail = fmt.Sprintf("; %s ends with:\n%s", p.LogPath, program.Tail(p.LogPath, 15))
			}
			return fmt.Errorf("%w: last: %v%s", ctx.Err(), err, tail)
		case <-ticker.C:
		}
	}
}

func (c *Cluster) startControllers(context.Context) error {
	k := c.opts.Peers.Kubernetes
	cm, err := startProcess(c.logDir(), "kube-controller-manager", nil, filepath.Join(k, "kube-controller-manager"),
		"--kubeconfig="+filepath.Join(c.dir, "controller-manager.kubeconfig"),
		"--leader-elect=false", "--secure-port=0",
		"--service-account-private-key-file="+filepath.Join(c.pki.dir, "sa.key"),
		"--root-ca-file="+c.pki.caFile(),
		"--use-service-account-credentials=true")
	if err != nil {
		return err
	}
	c.setProcess(&c.controller, cm)
	sched, err := startProcess(c.logDir(), "kube-scheduler", nil, filepath.Join(k, "kube-scheduler"),
		"--kubeconfig="+filepath.Join(c.dir, "scheduler.kubeconfig"),
		"--leader-elect=false", "--secure-port=0")
	if err != nil {
		return err
	}
	c.setProcess(&c.scheduler, sched)
	return nil
}

func (c *Cluster) prepareNode(context.Context) error {
	if err := c.createBridge(); err != nil {
		return err
	}
	ns, err := newMountNamespace(c.logDir(), nodeRoot(c.dir))
	if err != nil {
		return err
	}
	c.ns = ns
	cg, err := newCgroupRoot(filepath.Base(c.dir))
	if err != nil {
		return err
	}
	c.cgroups = cg
	return nil
}

// createBridge creates the pods' bridge with the node's address: kubelet
// refuses a loopback node IP, and the API server reaches kubelet (exec,
// logs) at the node's address. A random /32 of 100.64.0.0/10 (shared
// address space, routed nowhere) keeps clusters apart; the pods' subnet
// has no route to it.
func (c *Cluster) createBridge() error {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("pick the node address: %w", err)
	}
	c.nodeIP = net.IPv4(100, 64|(b[0]&0x3f), b[1], b[2]|1)
	for _, args := range [][]string{
		{"link", "add", c.bridge, "type", "bridge"},
		{"addr", "add", c.nodeIP.String() + "/32", "dev", c.bridge},
		{"link", "set", c.bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// NodeIP is the node's address (kubelet's InternalIP and listen address).
func (c *Cluster) NodeIP() string { return c.nodeIP.String() }

func (c *Cluster) startContainerd(ctx context.Context) error {
	if err := writeRuntimeConfig(c.dir, c.RuntimeSocket(), c.bridge, c.opts.Runtime); err != nil {
		return err
	}
	return c.runContainerd(ctx)
}

// writeRuntimeConfig writes the config of a node's containerd (its root
// and state under dir/containerd, listening on socket) and of its pods'
// network (dir/cni: the bridge), for every node alike.
func writeRuntimeConfig(dir, socket, bridge string, runtime Runtime) error {
	err := writeTemplate(filepath.Join(dir, "containerd", "config.toml"), containerdTemplate, map[string]any{
		"Root":       filepath.Join(dir, "containerd", "root"),
		"State":      filepath.Join(dir, "containerd", "state"),
		"Socket":     socket,
		"PauseImage": PauseImage,
		"CNIBinDir":  CNIBinDir,
		"CNIConfDir": filepath.Join(dir, "cni"),
		"Runc":       Runc,
		"EnableCDI":  runtime == Containerd17,
	}, 0o600)
	if err != nil {
		return err
	}
	return writeTemplate(filepath.Join(dir, "cni", "10-memif-test.conflist"), cniTemplate, map[string]string{"Bridge": bridge}, 0o644)
}

// runContainerd starts containerd in the node's namespace, its shim found
// next to it, and waits until it answers.
func (c *Cluster) runContainerd(ctx context.Context) error {
	path := "PATH=" + filepath.Dir(c.containerdBinary()) + ":" + os.Getenv("PATH")
	p, err := startProcess(c.logDir(), "containerd", []string{path},
		c.ns.argv(c.containerdBinary(), "--config", filepath.Join(c.dir, "containerd", "config.toml"))...)
	if err != nil {
		return err
	}
	c.setProcess(&c.containerd, p)
	return c.waitFor(ctx, p, func() error {
		_, err := c.Ctr(ctx, "version")
		return err
	})
}

func (c *Cluster) importPause(ctx context.Context) error {
	img, err := ociimage.PauseImage(PauseImage)
	if err != nil {
		return err
	}
	return c.ImportOCIImage(ctx, img)
}

func (c *Cluster) startKubelet(ctx context.Context) error {
	cert, key, err := c.pki.issue("kubelet-serving", NodeName, nil, true, c.nodeIP)
	if err != nil {
		return err
	}
	err = writeTemplate(filepath.Join(c.dir, "kubelet.yaml"), kubeletTemplate, map[string]string{
		"Address":       c.NodeIP(),
		"Port":          c.kubeletPort,
		"HealthzPort":   c.healthzPort,
		"Cert":          cert,
		"Key":           key,
		"CA":            c.pki.caFile(),
		"RuntimeSocket": c.RuntimeSocket(),
		"CgroupRoot":    "/" + c.cgroups.name,
	}, 0o600)
	if err != nil {
		return err
	}
	return c.runKubelet(ctx)
}

// runKubelet starts kubelet in the node's namespace and waits for its
// health endpoint.
func (c *Cluster) runKubelet(ctx context.Context) error {
	p, err := startProcess(c.logDir(), "kubelet", nil, c.ns.argv(filepath.Join(c.opts.Peers.Kubernetes, "kubelet"),
		"--config="+filepath.Join(c.dir, "kubelet.yaml"),
		"--kubeconfig="+filepath.Join(c.dir, "kubelet.kubeconfig"),
		"--hostname-override="+NodeName, "--node-ip="+c.NodeIP())...)
	if err != nil {
		return err
	}
	c.setProcess(&c.kubelet, p)
	return c.waitHTTP(ctx, p, "http://127.0.0.1:"+c.healthzPort+"/healthz", nil)
}

// WaitNodeReady waits until the node reports Ready.
func (c *Cluster) WaitNodeReady(ctx context.Context) error {
	client, err := c.Clientset()
	if err != nil {
		return err
	}
	return c.waitFor(ctx, c.kubeletProcess(), func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == v1.NodeReady {
				if cond.Status == v1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node %s not Ready: %s", NodeName, cond.Message)
			}
		}
		return fmt.Errorf("node %s has no Ready condition yet", NodeName)
	})
}

// waitSchedulable waits until a pod can be created and scheduled: the node
// lifecycle controller has removed kubelet's initial taints, and the
// service account controller has made default/default, without which the
// API refuses pods.
func (c *Cluster) waitSchedulable(ctx context.Context) error {
	client, err := c.Clientset()
	if err != nil {
		return err
	}
	return c.waitFor(ctx, c.kubeletProcess(), func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(node.Spec.Taints) > 0 {
			return fmt.Errorf("node %s has taints %v", NodeName, node.Spec.Taints)
		}
		_, err = client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// RestartKubelet stops kubelet (SIGTERM, as systemd would) and starts it
// again; it returns once kubelet serves its health endpoint. Running pods
// stay.
func (c *Cluster) RestartKubelet(ctx context.Context) error {
	if err := c.kubeletProcess().stop(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := c.runKubelet(ctx); err != nil {
		return fmt.Errorf("cluster: restart kubelet: %w", err)
	}
	return nil
}

// RestartContainerd stops containerd and starts it again; it returns once
// containerd answers. Containers keep running under their shims.
func (c *Cluster) RestartContainerd(ctx context.Context) error {
	c.mu.Lock()
	p := c.containerd
	c.mu.Unlock()
	if err := p.stop(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := c.runContainerd(ctx); err != nil {
		return fmt.Errorf("cluster: restart containerd: %w", err)
	}
	return nil
}

// RestartAPIServer stops kube-apiserver (SIGTERM) and starts it again on
// the same port, certificates and etcd; it returns once it answers
// /readyz. What the cluster holds is etcd's and stays; clients see their
// connections drop and reconnect.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if err := p.stop(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := c.runAPIServer(ctx); err != nil {
		return fmt.Errorf("cluster: restart kube-apiserver: %w", err)
	}
	return nil
}

func (c *Cluster) kubeletProcess() *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kubelet
}

func (c *Cluster) setProcess(slot **process, p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*slot = p
}

func (c *Cluster) logDir() string { return filepath.Join(c.dir, "logs") }

// Stop stops every peer, kills what is left of the pods and their shims,
// and removes the mount namespace, the cgroups, the bridge and the work dir.
// It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = c.stop()
		if c.interrupt != nil {
			signal.Stop(c.interrupt)
		}
		close(c.done)
	})
	return c.stopErr
}

func (c *Cluster) stop() error {
	c.mu.Lock()
	kubelet, containerd := c.kubelet, c.containerd
	control := []*process{c.scheduler, c.controller, c.apiserver, c.etcd}
	c.mu.Unlock()
	errs := []error{c.stopNodes()}
	errs = append(errs, kubelet.stop())
	if c.cgroups != nil {
		c.cgroups.kill()
	}
	errs = append(errs, containerd.stop())
	if c.ns != nil {
		// Without the node's mount namespace, the socket is the host's.
		killShims(c.RuntimeSocket())
	}
	for _, p := range control {
		errs = append(errs, p.stop())
	}
	if c.ns != nil {
		c.ns.close()
	}
	if c.cgroups != nil {
		errs = append(errs, c.cgroups.remove())
	}
	errs = append(errs, c.removeUnderlay())
	if out, err := exec.Command("ip", "link", "delete", c.bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
		errs = append(errs, fmt.Errorf("delete bridge %s: %w: %s", c.bridge, err, out))
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove the work dir: %w", err))
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims serving this cluster's containerd
// (their command line names its socket): a shim outlives containerd by
// design.
func killShims(socket string) {
	procs, _ := os.ReadDir("/proc")
	for _, proc := range procs {
		pid, err := strconv.Atoi(proc.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", proc.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.Contains(args[0], "containerd-shim") && containsArg(args, socket) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func containsArg(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}
