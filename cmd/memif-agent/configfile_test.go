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
// once, naming the file, with a short message; networks.conf, which the
// agent watches live, too.
func TestAgentRefusesConfigFileNotABoundedRegularFile(t *testing.T) {
	cases := []struct {
		name string
		// file is the config file made; empty: memifwiring.conf.
		file string
		make func(t *testing.T, path string)
		want string
	}{
		{"link to /dev/zero", "", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "is a character device, not a regular file"},
		{"FIFO", "", makeFIFO, "is a named pipe (FIFO), not a regular file"},
		{"networks.conf a FIFO", "networks.conf", makeFIFO, "is a named pipe (FIFO), not a regular file"},
		{"20 MB value", "", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("mtu: "+strings.Repeat("9", 20<<20)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is larger than the 1048576 bytes (1 MiB) a config file may hold"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			configDir := agentConfigDir(t, nil)
			if tc.file == "" {
				tc.file = "memifwiring.conf"
			}
			path := filepath.Join(configDir, tc.file)
			tc.make(t, path)
			agent := startAgent(t, configDir)
			select {
			case <-agent.exited:
				if agent.exitErr == nil {
					t.Fatalf("agent exited 0 with %s; want a failure", tc.name)
				}
			case <-time.After(time.Minute):
				unblockFIFO(path)
				t.Fatalf("agent still running a minute after its start with %s", tc.name)
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

func makeFIFO(t *testing.T, path string) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// unblockFIFO opens the FIFO at path for writing and closes it, so that
// an agent blocked in opening it goes on (and can be stopped).
func unblockFIFO(path string) {
	if writer, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		writer.Close()
	}
}
