package memifnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

const (
	// Namespace and DaemonSet are where Deploy installs the agent.
	Namespace = "memif-agent"
	DaemonSet = "memif-agent"
	// ResourceName is what memif pods ask for.
	ResourceName = "contivpp.io/memif"
	// TestpmdImage is the example pod's image (k8s/example-pod.yaml), as
	// the node knows it once imported.
	TestpmdImage = "docker.io/library/memif-testpmd:dev"
	// APISocket is the agent's node-local API (the chart's nodeapi.conf).
	APISocket = "/run/memif-agent/api.sock"
	// ContainerName is the memif container of CreateMemifPod's pods.
	ContainerName = "memif-client"
)

// Options configure Deploy.
type Options struct {
	// BinDir holds memifctl (make build); memifctl runs on the host.
	BinDir string
	// Values are values files of the chart (deploy/helm/memif-agent),
	// under the repository root, such as
	// deploy/helm/memif-agent/ci/vpp-values.yaml; none: its defaults.
	Values []string
	// Progress gets a line per step; nil discards them.
	Progress func(format string, args ...any)
	// ConfigKeys sets keys of the agent's config files through the
	// chart's config value, by file name (podmanager.conf) then key
	// (reconcile-period) to the YAML value. A file the chart does not ship
	// fails the install; a key the agent does not know stops the agent.
	ConfigKeys map[string]map[string]string
}

// Node is the agent deployed on a cluster's node.
type Node struct {
	c       *cluster.Cluster
	client  *kubernetes.Clientset
	root    string
	binDir  string
	logf    func(format string, args ...any)
	Options Options
	// HTTPPort and MetricsPort are the agent's loopback HTTP port and
	// its metrics listener's port, free ports Deploy picked.
	HTTPPort, MetricsPort int
}

// Deploy builds and imports the images, opts the node in, makes the
// agent's namespace for the "privileged" Pod Security level, and installs
// the chart with helm (release memif-agent in namespace memif-agent) with
// Options.Values, as the README tells an operator. It returns without
// waiting for the DaemonSet.
func Deploy(ctx context.Context, c *cluster.Cluster, opts Options) (*Node, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	client, err := c.Clientset()
	if err != nil {
		return nil, err
	}
	binDir, err := filepath.Abs(opts.BinDir)
	if err != nil {
		return nil, fmt.Errorf("memifnode: %w", err)
	}
	logf := opts.Progress
	if logf == nil {
		logf = func(string, ...any) {}
	}
	n := &Node{c: c, client: client, root: root, binDir: binDir, logf: logf, Options: opts}
	if err := n.importAgentImage(ctx); err != nil {
		return nil, err
	}
	img, err := testpmd.PodImage(TestpmdImage)
	if err != nil {
		return nil, err
	}
	if err := c.ImportOCIImage(ctx, img); err != nil {
		return nil, err
	}
	logf("memifnode: imported %s (%d files from the host)", TestpmdImage, len(img.Files))
	// The DaemonSet runs only on opted-in nodes (the chart's nodeSelector),
	// as an operator opts one in.
	if _, err := c.Kubectl(ctx, "label", "node", cluster.NodeName, NodeOptInLabel+"=true", "--overwrite"); err != nil {
		return nil, fmt.Errorf("memifnode: opt node %s in: %w", cluster.NodeName, err)
	}
	if err := n.makeNamespace(ctx); err != nil {
		return nil, err
	}
	out, err := n.Helm(ctx, "install")
	if err != nil {
		return nil, err
	}
	logf("memifnode: helm install %s %s %v (HTTP on 127.0.0.1:%d, metrics on port %d):\n%s", Release, ChartDir, opts.Values, n.HTTPPort, n.MetricsPort, strings.TrimSpace(out))
	return n, nil
}

// NodeOptInLabel is the node label the DaemonSet's nodeSelector asks for
// (value "true"); Deploy sets it on the cluster's node.
const NodeOptInLabel = "memif.contivpp.io/enabled"

// makeNamespace makes the agent's namespace open to the "privileged" Pod
// Security level, which the agent's host paths and root need.
func (n *Node) makeNamespace(ctx context.Context) error {
	if _, err := n.c.Kubectl(ctx, "create", "namespace", Namespace); err != nil {
		return fmt.Errorf("memifnode: %w", err)
	}
	if _, err := n.c.Kubectl(ctx, "label", "namespace", Namespace, "pod-security.kubernetes.io/enforce=privileged"); err != nil {
		return fmt.Errorf("memifnode: %w", err)
	}
	return nil
}

// Helm runs `helm <verb> memif-agent <chart> --namespace memif-agent`
// (install or upgrade) with Options.Values, then the kit's values (the
// image tag, free ports, ConfigKeys), then args, such as --set
// logs.conf... for an upgrade. The first call picks the free ports.
func (n *Node) Helm(ctx context.Context, verb string, args ...string) (string, error) {
	if n.HTTPPort == 0 {
		ports, err := cluster.FreePorts(2)
		if err != nil {
			return "", fmt.Errorf("memifnode: %w", err)
		}
		if n.HTTPPort, err = strconv.Atoi(ports[0]); err == nil {
			n.MetricsPort, err = strconv.Atoi(ports[1])
		}
		if err != nil {
			return "", fmt.Errorf("memifnode: free ports %v: %w", ports, err)
		}
	}
	values, err := kitValues(n.HTTPPort, n.MetricsPort, n.Options.ConfigKeys)
	if err != nil {
		return "", err
	}
	kitFile := filepath.Join(n.c.Dir(), "memifnode-values.yaml")
	if err := os.WriteFile(kitFile, values, 0o600); err != nil {
		return "", fmt.Errorf("memifnode: %w", err)
	}
	argv := []string{verb, Release, filepath.Join(n.root, ChartDir), "--namespace", Namespace}
	for _, file := range n.Options.Values {
		argv = append(argv, "--values", filepath.Join(n.root, file))
	}
	argv = append(argv, "--values", kitFile)
	return Helm(ctx, n.c, append(argv, args...)...)
}

// Uninstall runs helm uninstall of the release and waits until what it
// deletes is gone.
func (n *Node) Uninstall(ctx context.Context) (string, error) {
	return Helm(ctx, n.c, "uninstall", Release, "--namespace", Namespace, "--wait")
}

// importAgentImage runs scripts/image.sh (make image) into the cluster's
// work dir and imports the archive it saves.
func (n *Node) importAgentImage(ctx context.Context) error {
	out := filepath.Join(n.c.Dir(), "image")
	cmd := exec.CommandContext(ctx, filepath.Join(n.root, "scripts", "image.sh"))
	cmd.Env = append(os.Environ(), "OUT_DIR="+out)
	cmd.Dir = n.root
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("memifnode: make image (scripts/image.sh): %w: %s", err, output)
	}
	if err := n.c.ImportImage(ctx, filepath.Join(out, "memif-agent-image.tar")); err != nil {
		return err
	}
	n.logf("memifnode: make image, imported memif-agent:dev")
	return nil
}

// Dir is a directory for the caller's files (logs of the vswitch sides),
// removed with the cluster.
func (n *Node) Dir() string { return n.c.Dir() }

// Client is the cluster-admin clientset.
func (n *Node) Client() *kubernetes.Clientset { return n.client }

// DaemonSetReady returns nil once the DaemonSet has its pod on the node,
// up to date and Ready.
func (n *Node) DaemonSetReady(ctx context.Context) error {
	ds, err := n.client.AppsV1().DaemonSets(Namespace).Get(ctx, DaemonSet, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return daemonSetReady(ds)
}

func daemonSetReady(ds *appsv1.DaemonSet) error {
	s := ds.Status
	if s.DesiredNumberScheduled != 1 || s.NumberReady != 1 || s.UpdatedNumberScheduled != 1 || s.ObservedGeneration < ds.Generation {
		return fmt.Errorf("daemonset %s/%s: desired %d, ready %d, updated %d", ds.Namespace, ds.Name,
			s.DesiredNumberScheduled, s.NumberReady, s.UpdatedNumberScheduled)
	}
	return nil
}

// AgentPod returns the DaemonSet's running pod.
func (n *Node) AgentPod(ctx context.Context) (*v1.Pod, error) {
	pods, err := n.client.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=memif-agent"})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil && pods.Items[i].Status.Phase == v1.PodRunning {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no running pod of daemonset %s/%s among %d", Namespace, DaemonSet, len(pods.Items))
}

// AgentReplaced returns nil once the DaemonSet's running pod is another
// than the pod with UID old (deleted by the caller) and Ready.
func (n *Node) AgentReplaced(ctx context.Context, old types.UID) error {
	pod, err := n.AgentPod(ctx)
	if err != nil {
		return err
	}
	if pod.UID == old {
		return fmt.Errorf("agent pod %s is still the old one", pod.Name)
	}
	return n.DaemonSetReady(ctx)
}

// AgentNeverRestarted returns an error naming the agent pod's container
// restarts, with the log of the run before the last, when its container
// exited and kubelet started it again: a replaced agent must come up in
// one run.
func (n *Node) AgentNeverRestarted(ctx context.Context) error {
	pod, err := n.AgentPod(ctx)
	if err != nil {
		return err
	}
	for _, status := range pod.Status.ContainerStatuses {
		if status.RestartCount == 0 {
			continue
		}
		reason := ""
		if exited := status.LastTerminationState.Terminated; exited != nil {
			reason = fmt.Sprintf(" (last exit code %d, %s)", exited.ExitCode, exited.Reason)
		}
		return fmt.Errorf("agent pod %s: container %s restarted %d times%s\n%s",
			pod.Name, status.Name, status.RestartCount, reason, n.AgentLogs(ctx, 60))
	}
	return nil
}

// AgentLogs returns the last lines of the agent container's log, and of
// its previous run when it restarted: what a failing test shows.
func (n *Node) AgentLogs(ctx context.Context, lines int) string {
	var logs strings.Builder
	for _, run := range []string{"previous", "current"} {
		args := []string{"logs", "-n", Namespace, "daemonset/" + DaemonSet, fmt.Sprintf("--tail=%d", lines), "--previous=" + fmt.Sprint(run == "previous")}
		out, err := n.c.Kubectl(ctx, args...)
		if err != nil {
			out = err.Error()
		}
		fmt.Fprintf(&logs, "%s run of the agent:\n%s\n", run, strings.TrimSpace(out))
	}
	return logs.String()
}

// Allocatable returns the node's allocatable and capacity of
// contivpp.io/memif.
func (n *Node) Allocatable(ctx context.Context) (allocatable, capacity int64, err error) {
	node, err := n.client.CoreV1().Nodes().Get(ctx, cluster.NodeName, metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	a := node.Status.Allocatable[v1.ResourceName(ResourceName)]
	c := node.Status.Capacity[v1.ResourceName(ResourceName)]
	return a.Value(), c.Value(), nil
}

// MemifPod is a pod whose one container asks for a memif, waits for its
// socket and runs testpmd.PodCommand on it (testpmd as memif client,
// sending).
func MemifPod(namespace, name string) *v1.Pod { return MemifPodForwarding(namespace, name, "txonly") }

// MemifPodForwarding is MemifPod with testpmd's forwarding mode: txonly
// sends, rxonly counts what the vswitch delivers (testpmd.ParsePodStats
// reads its counters from the pod's log).
func MemifPodForwarding(namespace, name, mode string) *v1.Pod {
	noToken := false
	resources := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("100m"),
		v1.ResourceMemory: resource.MustParse("512Mi"),
	}
	limits := resources.DeepCopy()
	limits[v1.ResourceName(ResourceName)] = resource.MustParse("1")
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"memifnode": "memif"}},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken:  &noToken,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []v1.Container{{
				Name:            ContainerName,
				Image:           TestpmdImage,
				ImagePullPolicy: v1.PullNever,
				Command:         testpmd.PodCommandForwarding(mode),
				Resources:       v1.ResourceRequirements{Requests: resources, Limits: limits},
			}},
		},
	}
}

// CreatePod creates pod.
func (n *Node) CreatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	created, err := n.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("memifnode: create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return created, nil
}

// PodRunning returns the pod once it is Running with every container
// ready to run (started).
func (n *Node) PodRunning(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	pod, err := n.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if pod.Status.Phase != v1.PodRunning {
		return nil, fmt.Errorf("pod %s/%s is %s: %s", namespace, name, pod.Status.Phase, podReason(pod))
	}
	return pod, nil
}

func podReason(pod *v1.Pod) string {
	var reasons []string
	if pod.Status.Reason != "" {
		reasons = append(reasons, pod.Status.Reason+": "+pod.Status.Message)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			reasons = append(reasons, cs.Name+" waiting: "+w.Reason+" "+w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			reasons = append(reasons, fmt.Sprintf("%s terminated: %s (exit %d)", cs.Name, t.Reason, t.ExitCode))
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Status != v1.ConditionTrue && c.Message != "" {
			reasons = append(reasons, string(c.Type)+": "+c.Message)
		}
	}
	return strings.Join(reasons, "; ")
}

// DeletePod deletes the pod at once and returns when the API no longer
// has it.
func (n *Node) DeletePod(ctx context.Context, namespace, name string) error {
	zero := int64(0)
	err := n.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil {
		return fmt.Errorf("memifnode: delete pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// PodGone returns nil once the API has no pod namespace/name.
func (n *Node) PodGone(ctx context.Context, namespace, name string) error {
	_, err := n.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return fmt.Errorf("pod %s/%s still exists", namespace, name)
	}
	if strings.Contains(err.Error(), "not found") {
		return nil
	}
	return err
}

// PodStats reads the counters the pod's testpmd last printed to its log
// (kubectl logs).
func (n *Node) PodStats(ctx context.Context, namespace, pod string) (testpmd.PodStats, error) {
	out, err := n.c.Kubectl(ctx, "logs", "-n", namespace, pod, "-c", ContainerName, "--tail", "40")
	if err != nil {
		return testpmd.PodStats{}, err
	}
	stats, found := testpmd.ParsePodStats(out)
	if !found {
		return testpmd.PodStats{}, fmt.Errorf("pod %s/%s printed no testpmd counters yet; its log ends with:\n%s", namespace, pod, out)
	}
	return stats, nil
}

// Exec runs argv in a container of a pod through kubectl exec (the API
// server, kubelet and the runtime's streaming) and returns its output.
func (n *Node) Exec(ctx context.Context, namespace, pod, container string, argv ...string) (string, error) {
	args := append([]string{"exec", "-n", namespace, pod, "-c", container, "--"}, argv...)
	return n.c.Kubectl(ctx, args...)
}

// Link is what a memif pod's container got, seen from the container (its
// env and mount) and from the agent (the allocation with that secret).
type Link struct {
	Namespace, Pod string
	// Socket and Secret are the container's MEMIF_SOCKET and MEMIF_SECRET.
	Socket, Secret string
	// Mounted says the socket's directory is mounted in the container.
	Mounted bool
	// Allocation is the agent's allocation holding Secret.
	Allocation Allocation
	// HostSocket is the allocation's socket as this process reaches it.
	HostSocket string
}

// PodLink reads the container's env and mount through kubectl exec and
// finds the agent's allocation with the same secret through memifctl.
func (n *Node) PodLink(ctx context.Context, namespace, pod string) (Link, error) {
	// The image has a shell and testpmd only: builtins read the mounts.
	out, err := n.Exec(ctx, namespace, pod, ContainerName, "/bin/sh", "-c",
		`echo "$MEMIF_SOCKET"; echo "$MEMIF_SECRET"; d="${MEMIF_SOCKET%/*}"; `+
			`while read -r _ mnt _; do if [ "$mnt" = "$d" ]; then echo mounted; fi; done < /proc/self/mounts`)
	if err != nil {
		return Link{}, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || lines[0] == "" || lines[1] == "" {
		return Link{}, fmt.Errorf("pod %s/%s: container %s has no MEMIF_SOCKET or MEMIF_SECRET: %q", namespace, pod, ContainerName, out)
	}
	link := Link{Namespace: namespace, Pod: pod, Socket: lines[0], Secret: lines[1], Mounted: len(lines) > 2 && lines[2] == "mounted"}
	allocations, err := n.Memifctl(ctx, "--show-secrets", "list")
	if err != nil {
		return Link{}, err
	}
	for _, a := range allocations {
		if a.Secret == link.Secret {
			link.Allocation = a
			link.HostSocket = n.c.HostPath(a.HostSocket)
			return link, nil
		}
	}
	return Link{}, fmt.Errorf("pod %s/%s: no allocation of the agent has the container's secret (%d allocations)", namespace, pod, len(allocations))
}

// Allocation is one allocation in `memifctl -o json` output.
type Allocation struct {
	AllocationID    string   `json:"allocationId"`
	DeviceIDs       []string `json:"deviceIds"`
	PodNamespace    string   `json:"podNamespace"`
	PodName         string   `json:"podName"`
	PodUID          string   `json:"podUid"`
	ContainerName   string   `json:"containerName"`
	HostSocket      string   `json:"hostSocket"`
	ContainerSocket string   `json:"containerSocket"`
	Secret          string   `json:"secret"`
	// Networks are what each memif got from the node's networks.
	Networks []MemifNetwork `json:"networks"`
}

// Memifctl runs memifctl (BinDir) on the host against the first node's
// agent with -o json, and decodes the allocations it prints.
func (n *Node) Memifctl(ctx context.Context, args ...string) ([]Allocation, error) {
	return n.MemifctlOn(ctx, n.c.FirstNode(), args...)
}

// MemifctlText runs memifctl with args against the first node's agent and
// returns what it prints.
func (n *Node) MemifctlText(ctx context.Context, args ...string) (string, error) {
	return n.memifctlTextOn(ctx, n.c.FirstNode(), args...)
}

// Event is one record of the agent's event history in `memifctl -o json
// events` output.
type Event struct {
	Seq         string `json:"seq"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Events returns the agent's event history, oldest first, through
// memifctl.
func (n *Node) Events(ctx context.Context) ([]Event, error) {
	out, err := n.MemifctlText(ctx, "-o", "json", "events")
	if err != nil {
		return nil, err
	}
	var events []Event
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		return nil, fmt.Errorf("decode memifctl events output %q: %w", out, err)
	}
	return events, nil
}

// StartVswitch starts the vswitch side of link on the host: testpmd as
// memif server on the allocation's socket with its secret.
func (n *Node) StartVswitch(ctx context.Context, link Link, logPath string) (*testpmd.Vswitch, error) {
	return testpmd.StartVswitch(ctx, testpmd.VswitchConfig{Socket: link.HostSocket, Secret: link.Secret, LogPath: logPath})
}

// Released returns nil once the agent no longer lists the allocation and
// its directory is gone from the host.
func (n *Node) Released(ctx context.Context, a Allocation) error {
	allocations, err := n.Memifctl(ctx, "list")
	if err != nil {
		return err
	}
	for _, held := range allocations {
		if held.AllocationID == a.AllocationID {
			return fmt.Errorf("allocation %s (devices %v) is still held: pod %q", a.AllocationID, a.DeviceIDs, held.PodName)
		}
	}
	dir := filepath.Dir(a.HostSocket)
	if _, err := os.Stat(n.c.HostPath(dir)); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("allocation %s released but its directory %s is still there (%v)", a.AllocationID, dir, err)
	}
	return nil
}
