package agenttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewWritesConfig checks the config directory New writes, the one the
// agent binary reads: every path under the agent's own directory unless
// the setup names it, and the setup's extra lines.
func TestNewWritesConfig(t *testing.T) {
	cases := []struct {
		name  string
		setup Setup
		want  map[string][]string
	}{
		{
			name:  "zero setup",
			setup: Setup{},
			want: map[string][]string{
				"devicemanager.conf": {"device-count: 64\n", "plugin-dir: {dir}/device-plugins\n", "socket-root: {dir}/memif\n", "checkpoint-path: {dir}/state/checkpoint.json\n", "device-info-dir: {dir}/devinfo\n"},
				"podmanager.conf":    {"docker-endpoint: unix://{dir}/no-docker.sock\n", "pod-resources-socket: \"{dir}/pod-resources.sock\"\n"},
				"nodeapi.conf":       {"socket-path: {dir}/api/api.sock\n"},
				"health.conf":        {"probe-socket: {dir}/api/probe.sock\n"},
				"http.conf":          {"endpoint: 127.0.0.1:"},
			},
		},
		{
			name: "chosen paths and extra lines",
			setup: Setup{
				DeviceCount: 8, PluginDir: "/plugins", SocketRoot: "/memif", PodResourcesSocket: "/pr.sock",
				DockerEndpoint: "unix:///docker.sock", DeviceManager: "unbound-grace-period: 1s\n", NodeAPI: "socket-mode: \"0660\"\n",
			},
			want: map[string][]string{
				"devicemanager.conf": {"device-count: 8\n", "plugin-dir: /plugins\n", "socket-root: /memif\n", "unbound-grace-period: 1s\n"},
				"podmanager.conf":    {"docker-endpoint: unix:///docker.sock\n", "pod-resources-socket: \"/pr.sock\"\n"},
				"nodeapi.conf":       {"socket-mode: \"0660\"\n"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := New(t, tc.setup)
			dir := filepath.Dir(a.ConfigDir)
			for file, lines := range tc.want {
				content, err := os.ReadFile(filepath.Join(a.ConfigDir, file))
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range lines {
					if line = strings.ReplaceAll(line, "{dir}", dir); !strings.Contains(string(content), line) {
						t.Errorf("%s lacks %q:\n%s", file, line, content)
					}
				}
			}
		})
	}
}
