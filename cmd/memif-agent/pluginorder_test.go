package main

import (
	"slices"
	"testing"

	"github.com/ligato/cn-infra/agent"
)

// TestPluginsStartAfterWhatTheyWaitFor checks the order in which cn-infra
// starts the agent's plugins (every Init, then every AfterInit, in this
// order), as its dependency lookup makes it from memifAgent. A DRA driver
// started before the controller waited out its claims' sync on a loop not
// running yet, registered with kubelet 30 s late, and so lost the node's
// ResourceSlices to kubelet across every agent restart.
func TestPluginsStartAfterWhatTheyWaitFor(t *testing.T) {
	memifAgent := newMemifAgent()
	if err := parseCommandLine(nil); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, plugin := range agent.NewAgent(agent.AllPlugins(memifAgent)).Options().Plugins {
		order = append(order, plugin.String())
	}
	for _, tc := range []struct {
		first, then, why string
	}{
		{"devicemanager", "controller", "the loop's startup resync runs the device manager's handler"},
		{"memifwiring", "controller", "the loop's startup resync runs the memif wiring's handler"},
		{"controller", "dradriver", "the DRA driver's AfterInit waits for its claims' sync on the loop the controller's AfterInit starts"},
		{"dradriver", "podevents", "the pod events take the API server client the DRA driver makes in its AfterInit"},
	} {
		t.Run(tc.first+" before "+tc.then, func(t *testing.T) {
			first, then := slices.Index(order, tc.first), slices.Index(order, tc.then)
			if first < 0 || then < 0 || first > then {
				t.Errorf("cn-infra starts the plugins in the order %v: %s must start before %s, because %s", order, tc.first, tc.then, tc.why)
			}
		})
	}
}
