package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConfigPath: where each plugin's file is read from (configPath), and
// where it would be while it is missing (placeConfig, for a plugin that
// watches its file live).
func TestConfigPath(t *testing.T) {
	dir := t.TempDir()
	// A default file in the working directory is not read either.
	t.Chdir(dir)
	if err := os.WriteFile(filepath.Join(dir, "present.conf"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		file  string
		dir   string
		named bool
		want  string
		// place is where the file would be; want's when "-".
		place string
	}{
		{"default file in the config dir", "present.conf", dir, false, filepath.Join(dir, "present.conf"), "-"},
		{"default file missing: the defaults, watched for in the config dir", "absent.conf", dir, false, "", filepath.Join(dir, "absent.conf")},
		{"named file missing: kept, so loading it fails", "absent.conf", dir, true, filepath.Join(dir, "absent.conf"), "-"},
		{"absolute path taken as it is", "/etc/memif/x.conf", dir, true, "/etc/memif/x.conf", "-"},
		{"relative path with a directory taken as it is", "./x.conf", dir, true, "./x.conf", "-"},
		{"no config dir: a named file is the working directory's", "absent.conf", "", true, "absent.conf", "-"},
		{"no config dir: the default file is not looked for", "present.conf", "", false, "", "-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := configPath(tc.file, tc.dir, tc.named); got != tc.want {
				t.Errorf("configPath(%q, %q, %v) = %q, want %q", tc.file, tc.dir, tc.named, got, tc.want)
			}
			if tc.place == "-" {
				tc.place = tc.want
			}
			if got := placeConfig(tc.file, tc.dir, tc.named); got != tc.place {
				t.Errorf("placeConfig(%q, %q, %v) = %q, want %q", tc.file, tc.dir, tc.named, got, tc.place)
			}
		})
	}
}

// TestConfigDirWinsOverWorkingDirectory runs the agent in a working
// directory holding config files that would stop it: -config-dir alone is
// read, so it starts.
func TestConfigDirWinsOverWorkingDirectory(t *testing.T) {
	workDir := t.TempDir()
	for _, name := range []string{"devicemanager.conf", "controller.conf", "http.conf"} {
		if err := os.WriteFile(filepath.Join(workDir, name), []byte("not-a-key: 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	agent := startAgentIn(t, workDir, agentConfigDir(t, nil))
	agent.waitReady(t)
	// The log is read once the process, which writes it, is gone.
	if err := agent.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-agent.exited
	if strings.Contains(agent.log.String(), "not-a-key") {
		t.Errorf("agent read a config file of its working directory %s:\n%s", workDir, agent.log.String())
	}
}

// TestNamedConfigFileMissing: a config file the operator names must exist;
// only the default file names may be absent.
func TestNamedConfigFileMissing(t *testing.T) {
	configDir := agentConfigDir(t, nil)
	agent := startAgent(t, configDir, "-controller-config", "ctrl.conf")
	select {
	case <-agent.exited:
		if agent.exitErr == nil {
			t.Fatal("agent exited 0 with a missing -controller-config; want a failure")
		}
	case <-time.After(time.Minute):
		t.Fatal("agent still running a minute after start with a missing -controller-config")
	}
	if want := "read config file: open " + filepath.Join(configDir, "ctrl.conf") + ": no such file"; !strings.Contains(agent.log.String(), want) {
		t.Errorf("agent log does not say %q:\n%s", want, agent.log.String())
	}
}
