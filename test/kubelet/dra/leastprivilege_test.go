package dra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

const (
	// otherNode is a Node object made by hand: the cluster's one kubelet
	// is the agent's node.
	otherNode = "node-b"
)

// agentCredentials says how a token of the agent's service account is
// bound, for tokenFor.
type agentCredentials struct {
	name string
	// boundTo is the object the token is bound to: the agent's pod on its
	// node (what kubelet projects into it) or the Node object itself;
	// nil for a token bound to nothing.
	boundTo func(ctx context.Context, t *testing.T, admin kubernetes.Interface, node *corev1.Node) *authenticationv1.BoundObjectReference
}

// boundToAgentPod binds the token to a pod of the agent's service account
// on node, the binding kubelet gives the token it projects into the
// agent's pod.
func boundToAgentPod(ctx context.Context, t *testing.T, admin kubernetes.Interface, node *corev1.Node) *authenticationv1.BoundObjectReference {
	t.Helper()
	bound, err := memifnode.NewTokenPodOn(ctx, admin, node.Name)
	if err != nil {
		t.Fatal(err)
	}
	return bound
}

func boundToNode(_ context.Context, _ *testing.T, _ kubernetes.Interface, node *corev1.Node) *authenticationv1.BoundObjectReference {
	return &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID}
}

// agentClient is memifnode.AgentClient, or the test fails.
func agentClient(ctx context.Context, t *testing.T, c *cluster.Cluster, admin kubernetes.Interface, bound *authenticationv1.BoundObjectReference) kubernetes.Interface {
	t.Helper()
	client, err := memifnode.AgentClient(ctx, c, admin, bound)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// slice is a ResourceSlice of the driver: node's, or of no node (all
// nodes) when node is empty.
func slice(name, node string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{Driver: claims.DefaultDriverName,
			Pool: resourceapi.ResourcePool{Name: name, ResourceSliceCount: 1}},
	}
	if node != "" {
		s.Spec.NodeName = ptr.To(node)
	} else {
		s.Spec.AllNodes = ptr.To(true)
	}
	return s
}

// wantRefused fails t unless err is the admission policy's refusal saying
// want.
func wantRefused(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want refused", what)
		return
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v; want a refusal saying %q", what, err, want)
	}
}

// startPolicyCluster starts a cluster with the chart's service account,
// DRA RBAC and admission policies applied, and returns its node and a Node
// object of another, otherNode.
func startPolicyCluster(t *testing.T) (*cluster.Cluster, kubernetes.Interface, *corev1.Node, *corev1.Node) {
	t.Helper()
	c, admin := startCluster(t, cluster.Options{})
	ctx := t.Context()
	if err := memifnode.ApplyChartTemplates(ctx, c, []string{"templates/namespace.yaml", "templates/serviceaccount.yaml", "templates/rbac.yaml", "templates/admission-policy.yaml"},
		"--set", "dra.enabled=true", "--set", "namespace.create=true"); err != nil {
		t.Fatalf("apply the chart's service account, RBAC and admission policy: %v", err)
	}
	nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("the cluster's nodes: %v, %v; want its one node", nodes, err)
	}
	other, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: otherNode}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Node %s: %v", otherNode, err)
	}
	return c, admin, &nodes.Items[0], other
}

// TestAgentChangesOnlyItsNodesSlices applies the chart's namespace,
// service account, DRA RBAC and admission policy to the real
// API server. With a token of the agent's service account bound to the
// agent's node (through its pod, as kubelet projects it, or to the Node
// itself), the agent creates, updates and deletes its node's
// ResourceSlice, and is refused another node's and slices of no node; a
// token bound to nothing changes no slice. It reads claims and cannot
// write their spec (their status: TestAgentWritesOnlyItsDevicesStatus); it lists and watches pods (the driver asks for its node's
// by field selector; RBAC cannot narrow a list to them), and can neither
// read a pod by name nor write one.
func TestAgentChangesOnlyItsNodesSlices(t *testing.T) {
	c, admin, own, other := startPolicyCluster(t)
	ctx := t.Context()
	if _, err := admin.ResourceV1().ResourceSlices().Create(ctx, slice("other-node", other.Name), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s's slice as the cluster admin: %v", other.Name, err)
	}
	claim, err := admin.ResourceV1().ResourceClaims(namespace).Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "memif"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "memif", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: claims.DefaultDriverName}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a claim: %v", err)
	}

	// kube-apiserver enforces a policy once its informer has it: until
	// then a token bound to nothing is let through.
	unbound := agentClient(ctx, t, c, admin, nil)
	poll.Until(t, waitLimit, "the admission policy in force", func() error {
		_, err := unbound.ResourceV1().ResourceSlices().Create(ctx, slice("policy-probe", own.Name), metav1.CreateOptions{})
		if err == nil {
			err = admin.ResourceV1().ResourceSlices().Delete(ctx, "policy-probe", metav1.DeleteOptions{})
			return fmt.Errorf("a token bound to nothing still creates slices (%v)", err)
		}
		if !apierrors.IsInvalid(err) {
			return err
		}
		return nil
	})

	otherNodes := "memif-agent on node '" + own.Name + "' may not change the ResourceSlices of node '" + other.Name + "'"
	for _, creds := range []agentCredentials{{"token of the agent's pod", boundToAgentPod}, {"token bound to the Node", boundToNode}} {
		t.Run(creds.name, func(t *testing.T) {
			agent := agentClient(ctx, t, c, admin, creds.boundTo(ctx, t, admin, own))
			slices := agent.ResourceV1().ResourceSlices()
			created, err := slices.Create(ctx, slice("own-node", own.Name), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create its own node's slice: %v", err)
			}
			created.Labels = map[string]string{"updated": "yes"}
			if _, err := slices.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Errorf("update its own node's slice: %v", err)
			}
			if _, err := slices.List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("list slices: %v", err)
			}

			_, err = slices.Create(ctx, slice("agent-other-node", other.Name), metav1.CreateOptions{})
			wantRefused(t, "create another node's slice", err, otherNodes)
			theirs, err := admin.ResourceV1().ResourceSlices().Get(ctx, "other-node", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			theirs.Labels = map[string]string{"taken": "yes"}
			_, err = slices.Update(ctx, theirs, metav1.UpdateOptions{})
			wantRefused(t, "update another node's slice", err, otherNodes)
			wantRefused(t, "delete another node's slice", slices.Delete(ctx, "other-node", metav1.DeleteOptions{}), otherNodes)
			if _, err := admin.ResourceV1().ResourceSlices().Get(ctx, "other-node", metav1.GetOptions{}); err != nil {
				t.Errorf("%s's slice after the agent of %s tried to delete it: %v", other.Name, own.Name, err)
			}
			_, err = slices.Create(ctx, slice("agent-all-nodes", ""), metav1.CreateOptions{})
			wantRefused(t, "create a slice of all nodes", err, "may not change ResourceSlices of no node")

			if _, err := agent.ResourceV1().ResourceClaims(namespace).Get(ctx, claim.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("get a claim, as kubelet's helper does at prepare: %v", err)
			}
			claimCopy := claim.DeepCopy()
			claimCopy.Labels = map[string]string{"written": "yes"}
			if _, err := agent.ResourceV1().ResourceClaims(namespace).Update(ctx, claimCopy, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("update a claim: %v, want forbidden", err)
			}

			wantPodsListedAndWatchedOnly(ctx, t, agent, own.Name)

			if err := slices.Delete(ctx, created.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID(created.UID))}}); err != nil {
				t.Errorf("delete its own node's slice: %v", err)
			}
		})
	}

	t.Run("token bound to nothing", func(t *testing.T) {
		_, err := unbound.ResourceV1().ResourceSlices().Create(ctx, slice("unbound", own.Name), metav1.CreateOptions{})
		wantRefused(t, "create a slice with a token bound to no node", err, "token is bound to no node")
	})
}

// wantPodsListedAndWatchedOnly checks that agent lists and watches the
// pods of node, as the driver follows them to read their claims ahead of
// kubelet, and can neither read a pod by name nor write one.
func wantPodsListedAndWatchedOnly(ctx context.Context, t *testing.T, agent kubernetes.Interface, node string) {
	t.Helper()
	onNode := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()}
	pods := agent.CoreV1().Pods(metav1.NamespaceAll)
	if _, err := pods.List(ctx, onNode); err != nil {
		t.Errorf("list the pods of its node: %v", err)
	}
	watch, err := pods.Watch(ctx, onNode)
	if err != nil {
		t.Errorf("watch the pods of its node: %v", err)
	} else {
		watch.Stop()
	}
	if _, err := agent.CoreV1().Pods(namespace).Get(ctx, "any", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("get a pod: %v, want forbidden", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-made"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "pause", Image: cluster.PauseImage}}}}
	if _, err := agent.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create a pod: %v, want forbidden", err)
	}
	if err := agent.CoreV1().Pods(namespace).Delete(ctx, "any", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete a pod: %v, want forbidden", err)
	}
}

// TestAgentWritesOnlyItsDevicesStatus applies the chart's DRA RBAC and
// admission policies to the real API server and an allocated claim with a
// device of the driver in the agent's node's pool, one in another node's
// and one of another driver whose status that driver wrote. The agent's
// token writes its own device's entry (an update of the status subresource
// as the agent does) and removes it. It is refused writing
// another node's device (the policy), another driver's or removing that
// driver's entry (RBAC names the agent's driver alone), and changing the
// allocation; the other node's agent token is refused the first device's
// entry (RBAC grants the associated-node verbs only).
func TestAgentWritesOnlyItsDevicesStatus(t *testing.T) {
	c, admin, own, other := startPolicyCluster(t)
	ctx := t.Context()
	const otherDriver = "gpu.example.com"
	claim := allocatedClaim(ctx, t, admin, "status", own.Name, []resourceapi.DeviceRequestAllocationResult{
		{Request: "own", Driver: claims.DefaultDriverName, Pool: own.Name, Device: "memif-0"},
		{Request: "other-node", Driver: claims.DefaultDriverName, Pool: other.Name, Device: "memif-0"},
		{Request: "other-driver", Driver: otherDriver, Pool: own.Name, Device: "gpu-0"},
	})
	theirs := resourceapi.AllocatedDeviceStatus{Driver: otherDriver, Pool: own.Name, Device: "gpu-0",
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Configured", LastTransitionTime: metav1.Now()}}}
	claim.Status.Devices = []resourceapi.AllocatedDeviceStatus{theirs}
	claim, err := admin.ResourceV1().ResourceClaims(namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("write %s's device status as the cluster admin: %v", otherDriver, err)
	}

	agent := agentClient(ctx, t, c, admin, boundToAgentPod(ctx, t, admin, own))
	fieldManager := claims.DefaultDriverName + "/" + own.Name
	// applyTo writes devices as the driver's entries of claim's status as
	// the agent does: an update of the claim as read, every other
	// driver's entry kept (one named in devices written anew). Each write
	// changes the entries' message: an entry written again unchanged is
	// no change, which the API server lets anyone make.
	writes := 0
	applyTo := func(client kubernetes.Interface, claim *resourceapi.ResourceClaim, devices ...deviceKey) error {
		writes++
		current, err := admin.ResourceV1().ResourceClaims(namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status.Devices = slices.DeleteFunc(current.Status.Devices, func(d resourceapi.AllocatedDeviceStatus) bool {
			return d.Driver == claims.DefaultDriverName || slices.Contains(devices, deviceKey{d.Driver, d.Pool, d.Device})
		})
		for _, d := range devices {
			current.Status.Devices = append(current.Status.Devices, resourceapi.AllocatedDeviceStatus{Driver: d.driver, Pool: d.pool, Device: d.device,
				Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Wired", Message: fmt.Sprintf("write %d", writes), LastTransitionTime: metav1.Now()}}})
		}
		_, err = client.ResourceV1().ResourceClaims(namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{FieldManager: fieldManager})
		return err
	}
	apply := func(client kubernetes.Interface, devices ...deviceKey) error {
		return applyTo(client, claim, devices...)
	}
	ownDevice := deviceKey{claims.DefaultDriverName, own.Name, "memif-0"}
	// kube-apiserver enforces a policy once its informer has it: until
	// then the agent writes another node's device's entry, which the probe
	// claim, and nothing below, takes.
	otherDevice := deviceKey{claims.DefaultDriverName, other.Name, "memif-0"}
	probe := allocatedClaim(ctx, t, admin, "probe", own.Name, []resourceapi.DeviceRequestAllocationResult{
		{Request: "other-node", Driver: claims.DefaultDriverName, Pool: other.Name, Device: "memif-0"}})
	poll.Until(t, waitLimit, "the admission policy in force", func() error {
		if err := applyTo(agent, probe, otherDevice); err == nil {
			return errors.New("the agent still writes another node's device's status")
		} else if !apierrors.IsInvalid(err) {
			return err
		}
		return nil
	})
	otherAgent := agentClient(ctx, t, c, admin, boundToNode(ctx, t, admin, other))
	if err := apply(agent, ownDevice); err != nil {
		t.Fatalf("write its own device's status: %v", err)
	}
	wantDevices(ctx, t, admin, claim.Name, ownDevice, deviceKey{otherDriver, own.Name, "gpu-0"})

	onlyOwn := "memif-agent on node '" + own.Name + "' may write only the status.devices entries of driver memif.contivpp.io in pool '" + own.Name + "'"
	wantRefused(t, "write another node's device's status", apply(agent, ownDevice, otherDevice), onlyOwn)
	// RBAC names the agent's driver alone: another driver's entries are
	// refused before the policy looks.
	wantRefused(t, "write another driver's device's status", apply(agent, ownDevice, deviceKey{otherDriver, own.Name, "gpu-0"}),
		`cannot associated-node:update resource "resourceclaims/driver"`)
	current, err := admin.ResourceV1().ResourceClaims(namespace).Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	removed := current.DeepCopy()
	removed.Status.Devices = slices.DeleteFunc(removed.Status.Devices, func(d resourceapi.AllocatedDeviceStatus) bool { return d.Driver == otherDriver })
	_, err = agent.ResourceV1().ResourceClaims(namespace).UpdateStatus(ctx, removed, metav1.UpdateOptions{})
	wantRefused(t, "remove another driver's entry", err, `cannot associated-node:update resource "resourceclaims/driver"`)
	deallocated := current.DeepCopy()
	deallocated.Status.Allocation.Devices.Results = deallocated.Status.Allocation.Devices.Results[:2]
	deallocated.Status.Devices = slices.DeleteFunc(deallocated.Status.Devices, func(d resourceapi.AllocatedDeviceStatus) bool { return d.Driver == otherDriver })
	_, err = agent.ResourceV1().ResourceClaims(namespace).UpdateStatus(ctx, deallocated, metav1.UpdateOptions{})
	wantRefused(t, "change the claim's allocation", err, "")

	wantRefused(t, "the other node's agent writes this node's device's status", apply(otherAgent, ownDevice),
		`cannot arbitrary-node:update resource "resourceclaims/driver"`)

	if err := apply(agent); err != nil {
		t.Fatalf("remove its own device's status: %v", err)
	}
	wantDevices(ctx, t, admin, claim.Name, deviceKey{otherDriver, own.Name, "gpu-0"})
}

type deviceKey struct{ driver, pool, device string }

// allocatedClaim creates claim name with one request per result and
// writes results as its allocation on node, as the scheduler would.
func allocatedClaim(ctx context.Context, t *testing.T, admin kubernetes.Interface, name, node string, results []resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	t.Helper()
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, r := range results {
		claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, resourceapi.DeviceRequest{
			Name: r.Request, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: claims.DefaultDriverName}})
	}
	claim, err := admin.ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a claim: %v", err)
	}
	// The scheduler allocates a node-local claim to its node by name: the
	// API server asks an agent token bound to that node for the
	// associated-node verbs of resourceclaims/driver, any other for the
	// arbitrary-node ones.
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	claim, err = admin.ResourceV1().ResourceClaims(namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("allocate the claim as the cluster admin: %v", err)
	}
	return claim
}

// wantDevices fails t unless the claim's status.devices are want, in any
// order.
func wantDevices(ctx context.Context, t *testing.T, admin kubernetes.Interface, name string, want ...deviceKey) {
	t.Helper()
	claim, err := admin.ResourceV1().ResourceClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []deviceKey
	for _, d := range claim.Status.Devices {
		got = append(got, deviceKey{d.Driver, d.Pool, d.Device})
	}
	if len(got) != len(want) {
		t.Errorf("claim %s: status.devices %v, want %v", name, got, want)
		return
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("claim %s: status.devices %v, want %v", name, got, want)
			return
		}
	}
}
