package crossnode

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/plugins/networks/underlay"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// TestAgentChangesOnlyItsNodesAddressAndShares applies the chart's
// namespace, service account, cross-node RBAC and admission policies
// (crossNode.enabled) to the real API server. With a token of the agent's
// service account bound to its pod on node own, as kubelet projects it,
// the agent publishes and removes its own Node's underlay address and
// claims and releases its own share; it is refused, with the policies'
// messages, another Node's address, any other change of its own Node, a
// Lease held by or handed to another node, and a Lease owned by another
// Node. A token bound to no node changes no Node and no Lease.
func TestAgentChangesOnlyItsNodesAddressAndShares(t *testing.T) {
	admin := apiServer(t)
	ctx := context.Background()
	if err := memifnode.ApplyChartTemplates(ctx, controlPlane.cluster,
		[]string{"templates/namespace.yaml", "templates/serviceaccount.yaml", "templates/rbac-crossnode.yaml", "templates/admission-policy-crossnode.yaml"},
		"--set", "crossNode.enabled=true", "--set", "namespace.create=true"); err != nil {
		t.Fatalf("apply the chart's service account, cross-node RBAC and admission policies: %v", err)
	}
	names := createNodes(t, admin, 2)
	own, other := names[0], names[1]
	agent := agentClient(ctx, t, admin, own)
	unbound := agentClient(ctx, t, admin, "")
	// network has a share of node other, unclaimed none.
	network := shares.Network{Name: "admission", Subnet: netip.MustParsePrefix("10.72.0.0/24"), NodePrefixLength: 26}
	unclaimed := shares.Network{Name: "admission-unclaimed", Subnet: netip.MustParsePrefix("10.73.0.0/24"), NodePrefixLength: 26}
	otherShare, err := shares.Claimer{Client: admin, Namespace: memifnode.Namespace, Node: other}.Claim(ctx, network)
	if err != nil {
		t.Fatalf("claim node %s's share as the cluster admin: %v", other, err)
	}

	// kube-apiserver enforces a policy once its informer has it: until
	// then a token bound to nothing is let through.
	addr := netip.MustParseAddr("192.168.71.1")
	poll.Until(t, watchLimit, "the admission policies in force", func() error {
		if err := underlay.Publish(ctx, unbound, own, addr); !refused(err) {
			return fmt.Errorf("a token bound to nothing publishes an address: %v", err)
		}
		_, err := unbound.CoordinationV1().Leases(memifnode.Namespace).Create(ctx, lease("probe", own, nil), metav1.CreateOptions{})
		if !refused(err) {
			_ = admin.CoordinationV1().Leases(memifnode.Namespace).Delete(ctx, "probe", metav1.DeleteOptions{})
			return fmt.Errorf("a token bound to nothing creates a Lease: %v", err)
		}
		return nil
	})

	otherNode, err := admin.CoreV1().Nodes().Get(ctx, other, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownOnly := "memif-agent on node '" + own + "' may change only the annotation " + underlay.Annotation + " of its Node"
	for _, tc := range []struct {
		name string
		do   func() error
		// refusal is what the policy says; empty: allowed.
		refusal string
	}{
		{"publish its own Node's address", func() error { return underlay.Publish(ctx, agent, own, addr) }, ""},
		{"move its own Node's address", func() error { return underlay.Publish(ctx, agent, own, netip.MustParseAddr("192.168.71.2")) }, ""},
		{"remove its own Node's address", func() error {
			return patchNode(ctx, agent, own, `{"metadata":{"annotations":{"`+underlay.Annotation+`":null}}}`)
		}, ""},
		{"publish another Node's address", func() error { return underlay.Publish(ctx, agent, other, addr) },
			"memif-agent on node '" + own + "' may not change Node '" + other + "'"},
		{"label its own Node", func() error {
			return patchNode(ctx, agent, own, `{"metadata":{"labels":{"memif.contivpp.io/enabled":"true"}}}`)
		}, ownOnly},
		{"annotate its own Node otherwise", func() error {
			return patchNode(ctx, agent, own, `{"metadata":{"annotations":{"memif.contivpp.io/other":"x"}}}`)
		}, ownOnly},
		{"cordon its own Node", func() error { return patchNode(ctx, agent, own, `{"spec":{"unschedulable":true}}`) }, ownOnly},
		{"taint its own Node with its address", func() error {
			return patchNode(ctx, agent, own, `{"metadata":{"annotations":{"`+underlay.Annotation+`":"192.168.71.3"}},"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`)
		}, ownOnly},
		{"claim and release its own share", func() error {
			claimer := shares.Claimer{Client: agent, Namespace: memifnode.Namespace, Node: own}
			if _, err := claimer.Claim(ctx, network); err != nil {
				return err
			}
			return claimer.Release(ctx, network.Name)
		}, ""},
		{"claim a share as another node", func() error {
			_, err := shares.Claimer{Client: agent, Namespace: memifnode.Namespace, Node: other}.Claim(ctx, unclaimed)
			return err
		}, "memif-agent on node '" + own + "' may hold Lease '" + shares.LeaseName(unclaimed.Name, 0) + "' only as itself, not as node '" + other + "'"},
		{"take another node's share", func() error {
			taken, err := agent.CoordinationV1().Leases(memifnode.Namespace).Get(ctx, otherShare.Lease, metav1.GetOptions{})
			if err != nil {
				return err
			}
			taken.Spec.HolderIdentity = ptr.To(own)
			_, err = agent.CoordinationV1().Leases(memifnode.Namespace).Update(ctx, taken, metav1.UpdateOptions{})
			return err
		}, "memif-agent on node '" + own + "' may not change Lease '" + otherShare.Lease + "', held by node '" + other + "'"},
		{"free another node's share", func() error {
			return agent.CoordinationV1().Leases(memifnode.Namespace).Delete(ctx, otherShare.Lease, metav1.DeleteOptions{})
		}, "memif-agent on node '" + own + "' may not delete Lease '" + otherShare.Lease + "', held by node '" + other + "'"},
		{"hold a Lease owned by another Node", func() error {
			_, err := agent.CoordinationV1().Leases(memifnode.Namespace).Create(ctx, lease("owned-by-other", own, otherNode), metav1.CreateOptions{})
			return err
		}, "memif-agent on node '" + own + "' may give Lease 'owned-by-other' no owner but its own Node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			switch {
			case tc.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusal != "" && (!refused(err) || !strings.Contains(err.Error(), tc.refusal)):
				t.Errorf("%v; want a refusal saying %q", err, tc.refusal)
			}
		})
	}

	if got, err := admin.CoordinationV1().Leases(memifnode.Namespace).Get(ctx, otherShare.Lease, metav1.GetOptions{}); err != nil || ptr.Deref(got.Spec.HolderIdentity, "") != other {
		t.Errorf("node %s's share after the agent of %s tried to take and free it: %+v, %v", other, own, got, err)
	}
	node, err := admin.CoreV1().Nodes().Get(ctx, own, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The node lifecycle controller taints the Node, which no kubelet
	// keeps Ready.
	tainted := slices.ContainsFunc(node.Spec.Taints, func(taint v1.Taint) bool { return taint.Key == "k" })
	if _, ok := node.Annotations["memif.contivpp.io/other"]; ok || node.Spec.Unschedulable || tainted || node.Labels["memif.contivpp.io/enabled"] != "" {
		t.Errorf("Node %s after the refused changes: labels %v, annotations %v, spec %+v", own, node.Labels, node.Annotations, node.Spec)
	}
	t.Run("token bound to no node", func(t *testing.T) {
		err := underlay.Publish(ctx, unbound, own, addr)
		if !refused(err) || !strings.Contains(err.Error(), "token is bound to no node") {
			t.Errorf("publish with a token bound to no node: %v; want refused", err)
		}
	})
}

// refused says whether err is an admission policy's refusal.
func refused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
}

// patchNode merge-patches Node name with patch.
func patchNode(ctx context.Context, client kubernetes.Interface, name, patch string) error {
	_, err := client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// lease is a Lease named name held by holder, owned by owner if not nil.
func lease(name, holder string, owner *v1.Node) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: memifnode.Namespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)},
	}
	if owner != nil {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: owner.Name, UID: owner.UID}}
	}
	return l
}

// agentClient is memifnode.AgentClient on the control plane, bound to
// the agent's pod on node (none: to nothing), or the test fails.
func agentClient(ctx context.Context, t *testing.T, admin kubernetes.Interface, node string) kubernetes.Interface {
	t.Helper()
	var bound *authenticationv1.BoundObjectReference
	if node != "" {
		var err error
		if bound, err = memifnode.NewTokenPodOn(ctx, admin, node); err != nil {
			t.Fatal(err)
		}
	}
	client, err := memifnode.AgentClient(ctx, controlPlane.cluster, admin, bound)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
