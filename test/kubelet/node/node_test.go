package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// Bounds on what the suite waits for: a pod start on a loaded 2-core
// machine, and an agent (or kubelet) that comes back.
const (
	podTimeout   = 3 * time.Minute
	agentTimeout = 3 * time.Minute
)

// examplePod is k8s/example-pod.yaml's pod.
const examplePod = "memif-example"

// kubeletRestarts is how many times the suite restarts kubelet in a row.
const kubeletRestarts = 5

// memifPods are the suite's own memif pods, besides the example pod.
var memifPods = []string{"memif-a", "memif-b"}

// TestAgentOnARealNode walks through a node's life with the agent
// deployed; each step builds on the state the previous one left.
func TestAgentOnARealNode(t *testing.T) {
	// A step after a failed one would meet a state it was not written
	// for (a pod without its vswitch side): the suite stops there.
	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	c := cluster.StartForTest(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx := context.Background()
	n, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: binDir, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	// The cluster's work dir goes with it: what explains a failure is
	// logged before.
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.AgentLogs(context.Background(), 40))
		}
	})

	step("DaemonSet Ready", func(t *testing.T) {
		poll.Until(t, agentTimeout, "daemonset memif-agent Ready", func() error { return n.DaemonSetReady(ctx) })
	})
	deviceCount := configuredDeviceCount(t, n)
	step("allocatable equals device-count", func(t *testing.T) {
		waitAllocatable(t, n, deviceCount)
	})

	links := map[string]memifnode.Link{}
	step("memif pods Running with env and mount", func(t *testing.T) {
		if _, err := c.Kubectl(ctx, "apply", "-f", filepath.Join(repoRoot(t), "k8s", "example-pod.yaml")); err != nil {
			t.Fatal(err)
		}
		for _, name := range memifPods {
			if _, err := n.CreatePod(ctx, memifnode.MemifPod("default", name)); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range allPods() {
			waitRunning(t, n, name)
			link, err := n.PodLink(ctx, "default", name)
			if err != nil {
				t.Fatal(err)
			}
			if link.Socket != link.Allocation.ContainerSocket || !strings.HasPrefix(link.Socket, "/run/vpp/") {
				t.Errorf("pod %s: MEMIF_SOCKET %q, want the allocation's container socket %q under /run/vpp", name, link.Socket, link.Allocation.ContainerSocket)
			}
			if !link.Mounted {
				t.Errorf("pod %s: the directory of MEMIF_SOCKET %s is not mounted in the container", name, link.Socket)
			}
			if len(link.Allocation.DeviceIDs) != 1 {
				t.Errorf("pod %s: allocation %s has devices %v, want one", name, link.Allocation.AllocationID, link.Allocation.DeviceIDs)
			}
			links[name] = link
		}
	})

	// One vswitch side per pod, kept for the pod's life: DPDK's memif
	// client does not come back to a server that was stopped, and a link
	// that keeps passing packets through the later steps is what the user
	// wants to see.
	switches := map[string]*testpmd.Vswitch{}
	t.Cleanup(func() {
		for name, sw := range switches {
			if t.Failed() {
				t.Logf("the vswitch side of pod %s: its log ends with:\n%s", name, sw.LogTail(10))
			}
			_ = sw.Stop()
		}
	})
	step("traffic over every pod's memif", func(t *testing.T) {
		for _, name := range allPods() {
			switches[name] = startVswitch(t, n, links[name])
			assertFlowing(t, switches[name], name)
		}
	})

	step("agent binds every pod", func(t *testing.T) {
		for _, name := range allPods() {
			poll.Until(t, agentTimeout, "memifctl get default/"+name, func() error {
				got, err := n.Memifctl(ctx, "get", "default/"+name)
				if err != nil {
					return err
				}
				if len(got) != 1 || got[0].AllocationID != links[name].Allocation.AllocationID {
					return fmt.Errorf("memifctl get default/%s: %+v, want allocation %s", name, got, links[name].Allocation.AllocationID)
				}
				return nil
			})
		}
	})

	step("pod delete releases directory and devices", func(t *testing.T) {
		name := memifPods[0]
		link := links[name]
		if err := switches[name].Stop(); err != nil {
			t.Fatal(err)
		}
		delete(switches, name)
		if err := n.DeletePod(ctx, "default", name); err != nil {
			t.Fatal(err)
		}
		delete(links, name)
		poll.Until(t, podTimeout, "pod default/"+name+" gone", func() error { return n.PodGone(ctx, "default", name) })
		poll.Until(t, agentTimeout, "allocation of "+name+" released", func() error { return n.Released(ctx, link.Allocation) })
		waitAllocatable(t, n, deviceCount)
	})

	// Each restart leaves the stopped kubelet's socket for the new one to
	// remove, and the agent must register once with the new one: a second
	// registration is refused, and kubelet then refuses the next agent.
	step("kubelet restarts: re-registration, running pods untouched", func(t *testing.T) {
		before := containerIDs(t, n, remainingPods(links))
		for range kubeletRestarts {
			restarted := time.Now()
			if err := c.RestartKubelet(ctx); err != nil {
				t.Fatal(err)
			}
			waitReregistered(t, c, restarted, deviceCount)
		}
		poll.Until(t, agentTimeout, "node Ready after kubelet restart", func() error { return c.WaitNodeReady(ctx) })
		waitAllocatable(t, n, deviceCount)
		if refused := grepLines(t, c.LogPath("kubelet"), "device plugin already connected"); len(refused) > 0 {
			t.Errorf("kubelet refused %d registrations of the agent over %d restarts, want none:\n%s", len(refused), kubeletRestarts, strings.Join(refused, "\n"))
		}
		assertUntouched(t, n, before)
		for _, name := range remainingPods(links) {
			assertFlowing(t, switches[name], name)
		}
	})

	step("containerd restart: pods untouched, new memif pod runs", func(t *testing.T) {
		before := containerIDs(t, n, remainingPods(links))
		if err := c.RestartContainerd(ctx); err != nil {
			t.Fatal(err)
		}
		assertUntouched(t, n, before)
		name := "memif-after-containerd-restart"
		if _, err := n.CreatePod(ctx, memifnode.MemifPod("default", name)); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, n, name)
		link, err := n.PodLink(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		links[name] = link
		switches[name] = startVswitch(t, n, link)
		for _, name := range remainingPods(links) {
			assertFlowing(t, switches[name], name)
		}
	})

	step("agent pod replaced: every binding identical", func(t *testing.T) {
		before, err := n.Memifctl(ctx, "--show-secrets", "list")
		if err != nil {
			t.Fatal(err)
		}
		old, err := n.AgentPod(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.DeletePod(ctx, memifnode.Namespace, old.Name); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, agentTimeout, "a new agent pod Ready", func() error { return n.AgentReplaced(ctx, old.UID) })
		if err := n.AgentNeverRestarted(ctx); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, agentTimeout, "the new agent lists the same allocations", func() error {
			after, err := n.Memifctl(ctx, "--show-secrets", "list")
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(byID(after), byID(before)) {
				return fmt.Errorf("allocations now %+v, before %+v", byID(after), byID(before))
			}
			return nil
		})
		for _, name := range remainingPods(links) {
			assertFlowing(t, switches[name], name)
		}
	})

	step("kubectl drain releases everything", func(t *testing.T) {
		for name, sw := range switches {
			if err := sw.Stop(); err != nil {
				t.Fatal(err)
			}
			delete(switches, name)
		}
		out, err := c.Kubectl(ctx, "drain", cluster.NodeName, "--ignore-daemonsets", "--force", "--grace-period=0", "--timeout=3m")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl drain:\n%s", out)
		for _, name := range remainingPods(links) {
			poll.Until(t, podTimeout, "pod default/"+name+" gone", func() error { return n.PodGone(ctx, "default", name) })
			poll.Until(t, agentTimeout, "allocation of "+name+" released", func() error { return n.Released(ctx, links[name].Allocation) })
		}
		poll.Until(t, agentTimeout, "no allocation left", func() error {
			left, err := n.Memifctl(ctx, "list")
			if err != nil {
				return err
			}
			if len(left) > 0 {
				return fmt.Errorf("%d allocations left: %+v", len(left), left)
			}
			return nil
		})
		if _, err := c.Kubectl(ctx, "uncordon", cluster.NodeName); err != nil {
			t.Fatal(err)
		}
	})
}

func allPods() []string { return append([]string{examplePod}, memifPods...) }

func remainingPods(links map[string]memifnode.Link) []string {
	var names []string
	for name := range links {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// configuredDeviceCount reads device-count from the ConfigMap the chart
// installed.
func configuredDeviceCount(t *testing.T, n *memifnode.Node) int64 {
	t.Helper()
	cm, err := n.Client().CoreV1().ConfigMaps(memifnode.Namespace).Get(context.Background(), "memif-agent-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^device-count:\s*(\d+)`).FindStringSubmatch(cm.Data["devicemanager.conf"])
	if m == nil {
		t.Fatalf("no device-count in the ConfigMap's devicemanager.conf:\n%s", cm.Data["devicemanager.conf"])
	}
	count, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return count
}

func waitAllocatable(t *testing.T, n *memifnode.Node, want int64) {
	t.Helper()
	poll.Until(t, agentTimeout, "node allocatable contivpp.io/memif = device-count", func() error {
		allocatable, capacity, err := n.Allocatable(context.Background())
		if err != nil {
			return err
		}
		if allocatable != want || capacity != want {
			return fmt.Errorf("allocatable %d, capacity %d, want %d", allocatable, capacity, want)
		}
		return nil
	})
}

// waitReregistered waits until kubelet, restarted at since, has the
// agent's devices again. The node's status cannot tell: until the new
// kubelet posts it, it is the old one's. kubelet's device manager writes
// its checkpoint when a plugin's devices arrive. A step that goes on
// before (a containerd restart) meets a kubelet still admitting its pods.
func waitReregistered(t *testing.T, c *cluster.Cluster, since time.Time, want int64) {
	t.Helper()
	path := c.HostPath("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint")
	poll.Until(t, agentTimeout, "kubelet has the agent's devices again", func() error {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if !info.ModTime().After(since) {
			return fmt.Errorf("kubelet's device checkpoint %s last written at %s, before its restart at %s", path, info.ModTime(), since)
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checkpoint struct {
			Data struct {
				RegisteredDevices map[string][]string
			}
		}
		if err := json.Unmarshal(content, &checkpoint); err != nil {
			return fmt.Errorf("decode kubelet's device checkpoint %s: %w", path, err)
		}
		if got := len(checkpoint.Data.RegisteredDevices[memifnode.ResourceName]); int64(got) != want {
			return fmt.Errorf("kubelet's device checkpoint has %d devices of %s, want %d", got, memifnode.ResourceName, want)
		}
		return nil
	})
}

func waitRunning(t *testing.T, n *memifnode.Node, name string) {
	t.Helper()
	poll.Until(t, podTimeout, "pod default/"+name+" Running", func() error {
		_, err := n.PodRunning(context.Background(), "default", name)
		return err
	})
}

// startVswitch starts the vswitch side of link on the host and waits for
// the link to come up.
func startVswitch(t *testing.T, n *memifnode.Node, link memifnode.Link) *testpmd.Vswitch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), podTimeout)
	defer cancel()
	logPath := filepath.Join(n.Dir(), "vswitch-"+link.Pod+".log")
	sw, err := n.StartVswitch(ctx, link, logPath)
	if err != nil {
		t.Fatalf("pod %s: vswitch side on %s: %v", link.Pod, link.HostSocket, err)
	}
	if err := sw.WaitLinkUp(ctx); err != nil {
		_ = sw.Stop()
		t.Fatalf("pod %s: memif link on %s never came up: %v", link.Pod, link.HostSocket, err)
	}
	return sw
}

// assertFlowing waits until the vswitch side has received packets from the
// pod since the call.
func assertFlowing(t *testing.T, sw *testpmd.Vswitch, pod string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), podTimeout)
	defer cancel()
	if _, err := sw.WaitReceiving(ctx); err != nil {
		t.Fatalf("pod %s: %v", pod, err)
	}
}

// containerIDs maps each pod to its container's ID and restart count.
func containerIDs(t *testing.T, n *memifnode.Node, names []string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, name := range names {
		pod, err := n.PodRunning(context.Background(), "default", name)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = containerState(pod)
	}
	return ids
}

func containerState(pod *v1.Pod) string {
	var states []string
	for _, cs := range pod.Status.ContainerStatuses {
		states = append(states, fmt.Sprintf("%s %s restarts %d", cs.Name, cs.ContainerID, cs.RestartCount))
	}
	return strings.Join(states, ", ")
}

// assertUntouched waits until every pod is Running again as reported
// after a restart, and checks its containers are the ones of before.
func assertUntouched(t *testing.T, n *memifnode.Node, before map[string]string) {
	t.Helper()
	for name, want := range before {
		poll.Until(t, podTimeout, "pod default/"+name+" untouched", func() error {
			pod, err := n.PodRunning(context.Background(), "default", name)
			if err != nil {
				return err
			}
			if got := containerState(pod); got != want {
				return fmt.Errorf("pod %s containers: %s, before: %s", name, got, want)
			}
			return nil
		})
	}
}

// byID keys allocations by ID, for comparing two listings.
func byID(allocations []memifnode.Allocation) map[string]memifnode.Allocation {
	m := map[string]memifnode.Allocation{}
	for _, a := range allocations {
		m[a.AllocationID] = a
	}
	return m
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// grepLines returns the lines of the file at path that contain text.
func grepLines(t *testing.T, path, text string) []string {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(content), "\n") {
		if strings.Contains(line, text) {
			lines = append(lines, line)
		}
	}
	return lines
}
