package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAgentRefusesConfigFileNotABoundedRegularFile: a config file that
// links to /dev/zero, is a FIFO or holds a 20 MB value stops the agent at
// once, naming the file, with a short message.
func TestAgentRefusesConfigFileNotABoundedRegularFile(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"link to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "is a character device, not a regular file"},
		{"FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is a named pipe (FIFO), not a regular file"},
		{"20 MB value", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("mtu: "+strings.Repeat("9", 20<<20)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is larger than the 1048576 bytes (1 MiB) a config file may hold"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			configDir := agentConfigDir(t, nil)
			path := filepath.Join(configDir, "memifwiring.conf")
			tc.make(t, path)
			agent := startAgent(t, configDir)
			select {
			case <-agent.exited:
				if agent.exitErr == nil {
					t.Fatalf("agent exited 0 with memifwiring.conf %s; want a failure", tc.name)
				}
			case <-time.After(time.Minute):
				t.Fatalf("agent still running a minute after its start with memifwiring.conf %s", tc.name)
			}
			if want := "read config file " + path + ": it " + tc.want; !strings.Contains(agent.log.String(), want) {
				t.Errorf("agent log does not say %q:\n%.2000s", want, agent.log.String())
			}
			if len(agent.log.String()) > 64<<10 {
				t.Errorf("agent log is %d bytes long; want the refusal short", len(agent.log.String()))
			}
		})
	}
}
