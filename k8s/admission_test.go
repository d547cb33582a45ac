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
