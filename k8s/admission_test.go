package k8s_test

import (
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// TestAdmissionPolicyKeepsTheAgentToItsNode checks k8s/dra's admission
// policy (the chart's, with dra.enabled) as the API server reads it; what it admits and refuses is shown
// on a real API server (test/kubelet/dra, TestAgentChangesOnlyItsNodesSlices).
func TestAdmissionPolicyKeepsTheAgentToItsNode(t *testing.T) {
	m := loadRendered(t, "dra/memif-agent.yaml")
	policy, binding := m.policy, m.policyBinding
	username := "system:serviceaccount:" + m.serviceAccount.Namespace + ":" + m.serviceAccount.Name
	if len(policy.Spec.MatchConditions) != 1 || !strings.Contains(policy.Spec.MatchConditions[0].Expression, `"`+username+`"`) {
		t.Errorf("the policy's match conditions %+v do not select the agent's service account %s", policy.Spec.MatchConditions, username)
	}
	if policy.Spec.FailurePolicy == nil || *policy.Spec.FailurePolicy != admissionv1.Fail {
		t.Errorf("failure policy %v: a policy that cannot be evaluated must refuse, not admit", policy.Spec.FailurePolicy)
	}
	var rules []admissionv1.NamedRuleWithOperations
	if policy.Spec.MatchConstraints != nil {
		rules = policy.Spec.MatchConstraints.ResourceRules
	}
	covered := func(operation admissionv1.OperationType) bool {
		return slices.ContainsFunc(rules, func(rule admissionv1.NamedRuleWithOperations) bool {
			return slices.Contains(rule.APIGroups, "resource.k8s.io") && slices.Contains(rule.Resources, "resourceslices") &&
				(slices.Contains(rule.APIVersions, "*") || slices.Contains(rule.APIVersions, "v1")) &&
				(slices.Contains(rule.Operations, operation) || slices.Contains(rule.Operations, admissionv1.OperationAll))
		})
	}
	for _, operation := range []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete} {
		if !covered(operation) {
			t.Errorf("the policy does not match %s of resourceslices: %+v", operation, rules)
		}
	}
	expressions := ""
	for _, variable := range policy.Spec.Variables {
		expressions += variable.Expression + "\n"
	}
	for _, want := range []string{"authentication.kubernetes.io/node-name", "oldObject", "spec.?nodeName"} {
		if !strings.Contains(expressions, want) {
			t.Errorf("the policy's variables do not read %s:\n%s", want, expressions)
		}
	}
	if binding.Spec.PolicyName != policy.Name || !slices.Equal(binding.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) ||
		binding.Spec.MatchResources != nil || binding.Spec.ParamRef != nil {
		t.Errorf("binding %+v does not deny what policy %s refuses, for every slice", binding.Spec, policy.Name)
	}
}

// checkCrossNodePolicies checks the admission policies of the chart's
// crossNode.enabled, as the API server reads them, in r: one keeps the
// agent to its own Node's underlay address (updates of nodes), one to its
// own node's shares (creates, updates and deletes of leases), each for the
// agent's service account alone, refusing when it cannot be evaluated,
// and bound to deny. What they admit and refuse is shown on a real API
// server (test/kubelet/crossnode, TestAgentChangesOnlyItsNodesAddressAndShares).
func checkCrossNodePolicies(t *testing.T, r *rendered) {
	t.Helper()
	username := `"system:serviceaccount:` + r.serviceAccount.Namespace + ":" + r.serviceAccount.Name + `"`
	for _, want := range []struct {
		suffix, group, resource string
		operations              []admissionv1.OperationType
	}{
		{"-nodes", "", "nodes", []admissionv1.OperationType{admissionv1.Update}},
		{"-shares", "coordination.k8s.io", "leases", []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete}},
	} {
		i := slices.IndexFunc(r.policies, func(p admissionv1.ValidatingAdmissionPolicy) bool { return strings.HasSuffix(p.Name, want.suffix) })
		if i < 0 {
			t.Errorf("no admission policy of %s among %d", want.resource, len(r.policies))
			continue
		}
		policy := r.policies[i]
		if len(policy.Spec.MatchConditions) != 1 || !strings.Contains(policy.Spec.MatchConditions[0].Expression, username) {
			t.Errorf("policy %s's match conditions %+v do not select the agent's service account %s", policy.Name, policy.Spec.MatchConditions, username)
		}
		if policy.Spec.FailurePolicy == nil || *policy.Spec.FailurePolicy != admissionv1.Fail {
			t.Errorf("policy %s's failure policy %v: a policy that cannot be evaluated must refuse, not admit", policy.Name, policy.Spec.FailurePolicy)
		}
		var rules []admissionv1.NamedRuleWithOperations
		if policy.Spec.MatchConstraints != nil {
			rules = policy.Spec.MatchConstraints.ResourceRules
		}
		for _, operation := range want.operations {
			if !slices.ContainsFunc(rules, func(rule admissionv1.NamedRuleWithOperations) bool {
				return slices.Contains(rule.APIGroups, want.group) && slices.Contains(rule.Resources, want.resource) &&
					slices.Contains(rule.APIVersions, "*") && slices.Contains(rule.Operations, operation)
			}) {
				t.Errorf("policy %s does not match %s of %s: %+v", policy.Name, operation, want.resource, rules)
			}
		}
		if !slices.ContainsFunc(policy.Spec.Variables, func(v admissionv1.Variable) bool {
			return strings.Contains(v.Expression, "authentication.kubernetes.io/node-name")
		}) {
			t.Errorf("policy %s reads no node of the token: %+v", policy.Name, policy.Spec.Variables)
		}
		j := slices.IndexFunc(r.policyBindings, func(b admissionv1.ValidatingAdmissionPolicyBinding) bool { return b.Spec.PolicyName == policy.Name })
		if j < 0 {
			t.Errorf("no binding of policy %s", policy.Name)
			continue
		}
		if b := r.policyBindings[j]; !slices.Equal(b.Spec.ValidationActions, []admissionv1.ValidationAction{admissionv1.Deny}) || b.Spec.MatchResources != nil || b.Spec.ParamRef != nil {
			t.Errorf("binding %+v does not deny what policy %s refuses, for every object", b.Spec, policy.Name)
		}
	}
}
