package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAgentRefusesCheckpointThroughLinkIntoKubelet: checkpoint-path spelt
// through a symbolic link into a kubelet-like tree (kubelet's own
// checkpoint beside its registration socket) stops the agent, naming the
// path and what it resolves to, and leaves kubelet's files as they were:
// not taken for a damaged checkpoint and moved aside, no lock or journal
// beside them.
func TestAgentRefusesCheckpointThroughLinkIntoKubelet(t *testing.T) {
	configDir := agentConfigDir(t, nil)
	root := filepath.Dir(configDir)
	pluginDir := filepath.Join(root, "device-plugins")
	kubeletCheckpoint := filepath.Join(pluginDir, "kubelet_internal_checkpoint")
	const kubeletContent = `{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}},"Checksum":1}`
	if err := os.WriteFile(kubeletCheckpoint, []byte(kubeletContent), 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirNames(t, pluginDir)
	if err := os.MkdirAll(filepath.Join(root, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(root, "x", "kl")); err != nil {
		t.Fatal(err)
	}
	spelt := filepath.Join(root, "x", "kl", "device-plugins", "kubelet_internal_checkpoint")
	config := "plugin-dir: " + pluginDir + "\nsocket-root: " + filepath.Join(root, "memif") + "\ncheckpoint-path: " + spelt + "\n"
	if err := os.WriteFile(filepath.Join(configDir, "devicemanager.conf"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := startAgent(t, configDir)
	select {
	case <-agent.exited:
		if agent.exitErr == nil {
			t.Fatal("agent exited 0 with a checkpoint-path into kubelet's plugin dir; want a failure")
		}
	case <-time.After(time.Minute):
		t.Error("agent still running a minute after its start with a checkpoint-path into kubelet's plugin dir")
		agent.cmd.Process.Kill()
		<-agent.exited
	}
	for _, want := range []string{`config key "checkpoint-path"`, `"` + spelt + `" resolves to "` + kubeletCheckpoint + `"`} {
		if !strings.Contains(agent.log.String(), want) {
			t.Errorf("agent log does not say %q:\n%s", want, agent.log.String())
		}
	}
	if content, err := os.ReadFile(kubeletCheckpoint); err != nil || string(content) != kubeletContent {
		t.Errorf("kubelet's checkpoint after the agent's start: %q, %v; want it untouched", content, err)
	}
	if after := dirNames(t, pluginDir); !slices.Equal(after, before) {
		t.Errorf("kubelet's plugin dir holds %v after the agent's start, %v before", after, before)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	return names
}
