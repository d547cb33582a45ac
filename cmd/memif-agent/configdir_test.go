package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/syncbuffer"
)

// TestAgentRefusesAMissingConfigDir: a -config-dir (or $CONFIG_DIR) that
// is given but is not a directory stops the agent before any plugin
// starts, naming it and saying what to do. Every plugin's file is also
// named by an absolute -<plugin>-config, so that an agent that did start
// would touch only the test's directory.
func TestAgentRefusesAMissingConfigDir(t *testing.T) {
	configDir := agentConfigDir(t, nil)
	root := filepath.Dir(configDir)
	files, err := os.ReadDir(configDir)
	if err != nil {
		t.Fatal(err)
	}
	var pluginFlags []string
	for _, file := range files {
		plugin := strings.TrimSuffix(file.Name(), ".conf")
		pluginFlags = append(pluginFlags, "-"+plugin+"-config", filepath.Join(configDir, file.Name()))
	}
	missing := filepath.Join(root, "no-such-config")
	notDir := filepath.Join(configDir, "devicemanager.conf")
	cases := []struct {
		name string
		args []string
		env  string
		want []string
	}{
		{"missing -config-dir", []string{"-config-dir", missing}, "", []string{"-config-dir " + missing + " does not exist; create it", "leave -config-dir out"}},
		{"missing $CONFIG_DIR", nil, "CONFIG_DIR=" + missing, []string{"-config-dir " + missing + " does not exist; create it", "leave -config-dir out"}},
		{"-config-dir a file", []string{"-config-dir", notDir}, "", []string{"-config-dir " + notDir + " is not a directory"}},
		{"empty -config-dir", []string{"-config-dir="}, "", []string{"-config-dir is empty", "leave -config-dir (and $CONFIG_DIR) out"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"-http-port", "0"}, tc.args...), pluginFlags...)
			cmd := exec.Command(agentBinary, args...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), tc.env)
			out := &syncbuffer.Buffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err = <-exited:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("memif-agent %v still running a minute after its start; want it refused at once. It printed:\n%s", args, out)
			}
			exitErr, ok := err.(*exec.ExitError)
			if !ok || exitErr.ExitCode() != 2 {
				t.Errorf("memif-agent %v exited with %v, want exit status 2", args, err)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("memif-agent %v printed:\n%s\nwant it to say %q", args, out, want)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "state")); !os.IsNotExist(err) {
				t.Errorf("the refused agent made its checkpoint directory: %v", err)
			}
		})
	}
}
