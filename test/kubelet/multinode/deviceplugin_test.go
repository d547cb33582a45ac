package multinode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// memifsPerNode is devicemanager.conf device-count on every node.
const memifsPerNode = 2

// TestDevicePluginPlacesMemifPodsByEachNodesCapacity: two nodes advertise
// 2 memifs each (device-count in the agent's ConfigMap); four memif pods
// run two per node, each node's agent holding the allocations of its own
// two; a fifth stays Pending with the scheduler's reason. The second
// node's agent replaced (its pod deleted, the DaemonSet's new one Ready):
// the first node's agent is the same pod and lists the same allocations,
// the second lists the ones it held, and the fifth pod is still Pending.
// A memif freed on the first node lets the fifth pod in, there.
func TestDevicePluginPlacesMemifPodsByEachNodesCapacity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tn := startTwoNodes(ctx, t, memifnode.Options{
		ConfigKeys: map[string]map[string]string{"devicemanager.conf": {"device-count": fmt.Sprint(memifsPerNode)}},
	}, nil)
	for _, node := range tn.names {
		poll.Until(t, waitLimit, "node "+node+" advertises its memifs", func() error {
			allocatable, capacity, err := tn.agents.AllocatableOn(ctx, node)
			if err != nil {
				return err
			}
			if allocatable != memifsPerNode || capacity != memifsPerNode {
				return fmt.Errorf("node %s: %s allocatable %d, capacity %d; want %d", node, memifnode.ResourceName, allocatable, capacity, memifsPerNode)
			}
			return nil
		})
	}

	pods := []string{"memif-1", "memif-2", "memif-3", "memif-4"}
	for _, name := range pods {
		tn.createPods(ctx, t, memifPod(name))
	}
	placed := perNode(tn.waitRunning(ctx, t, pods...))
	for _, node := range tn.names {
		if len(placed[node]) != memifsPerNode {
			t.Fatalf("pods by node %v, want %d on each of %v", placed, memifsPerNode, tn.names)
		}
	}
	listed := map[string][]memifnode.Allocation{}
	for _, host := range tn.c.AllNodes() {
		listed[host.Name()] = tn.allocationsOf(ctx, t, host, placed[host.Name()])
	}

	tn.createPods(ctx, t, memifPod("memif-5"))
	reason := tn.waitUnschedulable(ctx, t, "memif-5")
	// Both nodes were weighed, and both lacked a memif.
	if want := fmt.Sprintf("0/%d nodes are available: %d Insufficient %s", nodes, nodes, memifnode.ResourceName); !strings.Contains(reason, want) {
		t.Errorf("memif-5's PodScheduled message %q does not say %q", reason, want)
	}
	t.Logf("memif-5 Pending: %s", reason)

	first, second := tn.c.FirstNode(), tn.c.Nodes()[0]
	firstAgent, err := tn.agents.AgentPodOn(ctx, first.Name())
	if err != nil {
		t.Fatal(err)
	}
	tn.replaceAgent(ctx, t, second.Name())
	if now, err := tn.agents.AgentPodOn(ctx, first.Name()); err != nil || now.UID != firstAgent.UID {
		t.Errorf("node %s's agent after %s's agent was replaced: %v, %v; want pod %s untouched", first.Name(), second.Name(), now, err, firstAgent.Name)
	}
	for _, host := range []cluster.NodeHost{first, second} {
		if now := tn.allocationsOf(ctx, t, host, placed[host.Name()]); !sameAllocations(now, listed[host.Name()]) {
			t.Errorf("node %s's agent lists after %s's agent was replaced:\n%v\nwant as before:\n%v", host.Name(), second.Name(), now, listed[host.Name()])
		}
	}
	if reason := tn.waitUnschedulable(ctx, t, "memif-5"); !strings.Contains(reason, "Insufficient") {
		t.Errorf("memif-5 after the agent's replacement: %q", reason)
	}

	tn.deletePod(ctx, t, placed[first.Name()][0])
	if node := tn.waitRunning(ctx, t, "memif-5")["memif-5"]; node != first.Name() {
		t.Errorf("memif-5 runs on %s once a memif of %s is freed, want %s", node, first.Name(), first.Name())
	}
}

// allocationsOf lists the allocations of the node's agent (memifctl) and
// fails unless they are one per pod of pods, each naming its pod.
func (tn *twoNodes) allocationsOf(ctx context.Context, t *testing.T, host cluster.NodeHost, pods []string) []memifnode.Allocation {
	t.Helper()
	var allocations []memifnode.Allocation
	poll.Until(t, waitLimit, "node "+host.Name()+"'s agent lists its pods' allocations", func() error {
		var err error
		if allocations, err = tn.agents.MemifctlOn(ctx, host, "list"); err != nil {
			return err
		}
		var named []string
		for _, a := range allocations {
			named = append(named, a.PodName)
		}
		slices.Sort(named)
		if !slices.Equal(named, pods) {
			return fmt.Errorf("node %s's agent lists allocations of pods %v, want %v", host.Name(), named, pods)
		}
		return nil
	})
	return allocations
}

// sameAllocations compares two listings by allocation, devices and pod.
func sameAllocations(a, b []memifnode.Allocation) bool {
	key := func(list []memifnode.Allocation) []string {
		var keys []string
		for _, x := range list {
			keys = append(keys, fmt.Sprintf("%s %v %s/%s %s", x.AllocationID, x.DeviceIDs, x.PodNamespace, x.PodName, x.PodUID))
		}
		slices.Sort(keys)
		return keys
	}
	return slices.Equal(key(a), key(b))
}

// replaceAgent deletes the agent pod of node (as an eviction or a rolling
// update does) and waits for the DaemonSet's new pod there to be Ready.
func (tn *twoNodes) replaceAgent(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	old, err := tn.agents.AgentPodOn(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if err := tn.client.CoreV1().Pods(memifnode.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "a new agent pod Ready on "+node, func() error {
		pod, err := tn.agents.AgentPodOn(ctx, node)
		if err != nil {
			return err
		}
		if pod.UID == old.UID {
			return fmt.Errorf("agent pod %s on %s is still the old one", pod.Name, node)
		}
		return tn.agents.DaemonSetReadyOnAll(ctx)
	})
}
