package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/ligato/cn-infra/agent"

	"github.com/contivpp/memif-agent/internal/agentwiring"
)

// pluginOrderEnv, set, makes the test binary print the order in which
// cn-infra starts the agent's plugins and exit (printPluginOrder): making
// the agent declares its flags, and cn-infra's HTTP servers made later in
// the same process would take their ports from them.
const pluginOrderEnv = "MEMIF_AGENT_TEST_PLUGIN_ORDER"

// pluginLinePrefix marks printPluginOrder's lines among whatever else the
// process writes.
const pluginLinePrefix = "plugin "

// printPluginOrder prints the agent's plugins in the order cn-infra's
// dependency lookup makes from the agent's wiring, one per line.
func printPluginOrder() int {
	memifAgent := agentwiring.New(forPlugin)
	if err := parseCommandLine(nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, plugin := range agent.NewAgent(agent.AllPlugins(memifAgent)).Options().Plugins {
		fmt.Println(pluginLinePrefix + plugin.String())
	}
	return 0
}

// TestPluginsStartAfterWhatTheyWaitFor checks the order in which cn-infra
// starts the agent's plugins (every Init, then every AfterInit, in this
// order). A plugin that pushes into the loop before the controller's Init
// made it pushes into none: the vswitch's resync after connecting to VPP
// was lost at every start. A DRA driver started before the controller
// waited out its claims' sync on a loop not running yet, registered with
// kubelet 30 s late, and so lost the node's ResourceSlices to kubelet
// across every agent restart.
func TestPluginsStartAfterWhatTheyWaitFor(t *testing.T) {
	self := exec.Command(os.Args[0])
	self.Env = append(os.Environ(), pluginOrderEnv+"=1")
	var stderr bytes.Buffer
	self.Stderr = &stderr
	out, err := self.Output()
	if err != nil {
		t.Fatalf("list the agent's plugins in a test binary of their own: %v\n%s", err, stderr.String())
	}
	var order []string
	lines := bufio.NewScanner(bytes.NewReader(out))
	for lines.Scan() {
		if name, ok := strings.CutPrefix(lines.Text(), pluginLinePrefix); ok {
			order = append(order, name)
		}
	}
	for _, tc := range []struct {
		first, then, why string
	}{
		{"devicemanager", "controller", "the loop's startup resync runs the device manager's handler"},
		{"memifwiring", "controller", "the loop's startup resync runs the memif wiring's handler"},
		{"controller", "vswitch", "the vswitch pushes its resync after connecting to VPP from its Init, into the loop the controller's Init makes"},
		{"controller", "crossnode", "the cross-node tracker pushes the span it finds once crossnode's Init has waited for its first listing"},
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
