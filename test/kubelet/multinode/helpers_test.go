package multinode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

const (
	// waitLimit bounds each wait on the cluster: a machine under load
	// takes tens of seconds for what takes one.
	waitLimit = 3 * time.Minute
	namespace = "default"
	// nodes is the size of the suite's clusters.
	nodes = 2
)

// twoNodes is a cluster of two nodes with the agent on each.
type twoNodes struct {
	c      *cluster.Cluster
	agents *memifnode.Node
	client kubernetes.Interface
	// names are the nodes' names, the first node's first.
	names []string
}

// startTwoNodes starts a cluster of two nodes, installs the chart with
// opts (BinDir and Progress filled), opts both nodes in, runs prepare (with
// the chart installed, before the second node joins) and waits for an
// agent Ready on each node.
func startTwoNodes(ctx context.Context, t *testing.T, opts memifnode.Options, prepare func(*memifnode.Node) error) *twoNodes {
	t.Helper()
	c := cluster.StartForTest(t, cluster.Options{Nodes: nodes, Progress: testlog.Writer(t)})
	opts.BinDir, opts.Progress = binDir, t.Logf
	agents, err := memifnode.Deploy(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(agentLogs(context.Background(), agents))
		}
	})
	if prepare != nil {
		if err := prepare(agents); err != nil {
			t.Fatal(err)
		}
	}
	if err := agents.JoinNodes(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "an agent Ready on each node", func() error { return agents.DaemonSetReadyOnAll(ctx) })
	tn := &twoNodes{c: c, agents: agents, client: agents.Client()}
	for _, host := range c.AllNodes() {
		tn.names = append(tn.names, host.Name())
	}
	return tn
}

// agentLogs are the last lines of every agent's log, by pod.
func agentLogs(ctx context.Context, agents *memifnode.Node) string {
	out, err := agents.Client().CoreV1().Pods(memifnode.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=memif-agent"})
	if err != nil {
		return "list the agent pods: " + err.Error()
	}
	var logs strings.Builder
	for _, pod := range out.Items {
		tail := int64(40)
		data, err := agents.Client().CoreV1().Pods(memifnode.Namespace).GetLogs(pod.Name, &v1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
		if err != nil {
			data = []byte(err.Error())
		}
		fmt.Fprintf(&logs, "agent pod %s on %s:\n%s\n", pod.Name, pod.Spec.NodeName, data)
	}
	return logs.String()
}

// memifPod is a pause pod asking for one memif through the device plugin.
func memifPod(name string) *v1.Pod {
	pod := pausePod(name)
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{memifnode.ResourceName: resource.MustParse("1")}
	return pod
}

// claimPod is a pause pod asking for one memif through a claim made from
// the ResourceClaimTemplate memif (k8s/dra/resourceclaimtemplate.yaml).
func claimPod(name string) *v1.Pod {
	pod := pausePod(name)
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "memif", ResourceClaimTemplateName: ptr.To("memif")}}
	pod.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "memif"}}
	return pod
}

func pausePod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Containers:                    []v1.Container{{Name: "main", Image: cluster.PauseImage, ImagePullPolicy: v1.PullNever}},
		},
	}
}

func (tn *twoNodes) createPods(ctx context.Context, t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	for _, pod := range pods {
		if _, err := tn.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
	}
}

// waitRunning waits until every named pod is Running and returns each
// one's node, by pod name.
func (tn *twoNodes) waitRunning(ctx context.Context, t *testing.T, names ...string) map[string]string {
	t.Helper()
	placed := map[string]string{}
	for _, name := range names {
		poll.Until(t, waitLimit, "pod "+name+" Running", func() error {
			pod, err := tn.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pod.Status.Phase != v1.PodRunning {
				return fmt.Errorf("pod %s is %s on %q: %v", name, pod.Status.Phase, pod.Spec.NodeName, pod.Status.Conditions)
			}
			placed[name] = pod.Spec.NodeName
			return nil
		})
	}
	return placed
}

// perNode returns the pods placed on each node, sorted.
func perNode(placed map[string]string) map[string][]string {
	byNode := map[string][]string{}
	for pod, node := range placed {
		byNode[node] = append(byNode[node], pod)
	}
	for node := range byNode {
		slices.Sort(byNode[node])
	}
	return byNode
}

// waitUnschedulable waits until the scheduler has marked the pod
// unschedulable, and returns its PodScheduled condition's message; the pod
// must be Pending on no node.
func (tn *twoNodes) waitUnschedulable(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	var message string
	poll.Until(t, waitLimit, "pod "+name+" unschedulable", func() error {
		pod, err := tn.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.Status.Phase != v1.PodPending || pod.Spec.NodeName != "" {
			return fmt.Errorf("pod %s is %s on %q, want Pending on no node", name, pod.Status.Phase, pod.Spec.NodeName)
		}
		for _, condition := range pod.Status.Conditions {
			if condition.Type == v1.PodScheduled && condition.Status == v1.ConditionFalse && condition.Reason == v1.PodReasonUnschedulable {
				message = condition.Message
				return nil
			}
		}
		return fmt.Errorf("pod %s has no PodScheduled=False Unschedulable condition: %v", name, pod.Status.Conditions)
	})
	return message
}

func (tn *twoNodes) deletePod(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if err := tn.agents.DeletePod(ctx, namespace, name); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "pod "+name+" gone", func() error { return tn.agents.PodGone(ctx, namespace, name) })
}
