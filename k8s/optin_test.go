package k8s_test

import "testing"

// NodeOptInLabel is the label a node needs for the agent to run on it.
const NodeOptInLabel = "memif.contivpp.io/enabled"

// TestDaemonSetRunsOnOptedInNodesOnly: the DaemonSet selects linux nodes
// labelled memif.contivpp.io/enabled=true, and nothing else.
func TestDaemonSetRunsOnOptedInNodesOnly(t *testing.T) {
	m := loadManifests(t)
	selector := m.daemonSet.Spec.Template.Spec.NodeSelector
	want := map[string]string{"kubernetes.io/os": "linux", NodeOptInLabel: "true"}
	if len(selector) != len(want) {
		t.Errorf("nodeSelector = %v, want %v", selector, want)
	}
	for key, value := range want {
		if selector[key] != value {
			t.Errorf("nodeSelector[%s] = %q, want %q", key, selector[key], value)
		}
	}
}
