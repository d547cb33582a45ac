package faults

import (
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

// TestHostileConfigIsRefused starts the agent with config values that are
// malformed or would weaken the node: it must refuse to start and name the
// key. (cmd/memif-agent's tests cover a bad value of each file; these are
// the hostile ones.)
func TestHostileConfigIsRefused(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string
		wantKey string
	}{
		{"huge device count", "devicemanager.conf", "device-count: 100000000\n", "device-count"},
		{"negative device count", "devicemanager.conf", "device-count: -1\n", "device-count"},
		{"fractional device count", "devicemanager.conf", "device-count: 1.5\n", "device-count"},
		{"device count as text", "devicemanager.conf", "device-count: lots\n", "device-count"},
		{"relative socket root", "devicemanager.conf", "socket-root: memif\n", "socket-root"},
		{"socket root traversing to /", "devicemanager.conf", "socket-root: /var/run/../../\n", "socket-root"},
		{"checkpoint under the socket root by traversal", "devicemanager.conf", "socket-root: /run/m\ncheckpoint-path: /run/x/../m/cp.json\n", "checkpoint-path"},
		{"plugin socket escaping the plugin dir", "devicemanager.conf", "plugin-socket: ../../../etc/evil.sock\n", "plugin-socket"},
		{"socket name with a slash", "devicemanager.conf", "socket-name: ../memif.sock\n", "socket-name"},
		{"relative container dir", "devicemanager.conf", "container-dir: run/vpp\n", "container-dir"},
		{"world-writable allocation dirs", "devicemanager.conf", "dir-mode: \"0777\"\n", "dir-mode"},
		{"setuid dir mode", "devicemanager.conf", "dir-mode: \"4770\"\n", "dir-mode"},
		{"negative grace period", "devicemanager.conf", "unbound-grace-period: -5m\n", "unbound-grace-period"},
		{"reconcile period of an old devicemanager.conf", "devicemanager.conf", "reconcile-period: 1m\n", `devicemanager.conf: config key "reconcile-period": moved to podmanager.conf`},
		{"reserved resource domain", "devicemanager.conf", "resource-name: kubernetes.io/memif\n", "resource-name"},
		{"world-connectable API socket", "nodeapi.conf", "socket-mode: \"0666\"\n", "socket-mode"},
		{"API socket mode beyond permissions", "nodeapi.conf", "socket-mode: \"1777\"\n", "socket-mode"},
		{"relative API socket path", "nodeapi.conf", "socket-path: api.sock\n", "socket-path"},
		{"negative watch buffer", "nodeapi.conf", "watch-buffer: -1\n", "watch-buffer"},
		{"negative pod reconcile period", "podmanager.conf", "reconcile-period: -1s\n", "reconcile-period"},
		{"relative pod-resources socket", "podmanager.conf", "pod-resources-socket: kubelet.sock\n", "pod-resources-socket"},
		{"Docker endpoint of another scheme", "podmanager.conf", "docker-endpoint: ftp://host/docker\n", "docker-endpoint"},
		{"negative event queue", "controller.conf", "event-queue-size: -1\n", "event-queue-size"},
		{"huge event queue", "controller.conf", "event-queue-size: 1000000000000\n", "event-queue-size"},
		{"negative healing delay", "controller.conf", "healing-delay: -1s\n", "healing-delay"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := agenttest.New(t, agenttest.Setup{})
			current := map[string]string{
				"devicemanager.conf": a.DeviceManagerConfig(agenttest.Setup{}),
				"nodeapi.conf":       "socket-path: " + a.APISocket + "\n",
			}
			agenttest.WriteConfig(t, a.ConfigDir, map[string]string{tc.file: withoutKeysOf(current[tc.file], tc.content) + tc.content})
			a.Launch()
			if err := a.WaitExit(); err == nil {
				t.Fatalf("the agent exited 0 with %s %q; want a refusal", tc.file, tc.content)
			}
			if log := a.Log(); !strings.Contains(log, tc.wantKey) {
				t.Errorf("the agent's refusal does not name %q:\n%s", tc.wantKey, a.LogTail(5))
			}
		})
	}
}

// withoutKeysOf drops the lines of config that set a key override sets, so
// that the test's own safe paths stay wherever the case does not replace
// them.
func withoutKeysOf(config, override string) string {
	overridden := map[string]bool{}
	for _, line := range strings.Split(override, "\n") {
		if key, _, found := strings.Cut(line, ":"); found {
			overridden[key] = true
		}
	}
	var kept []string
	for _, line := range strings.Split(config, "\n") {
		if key, _, found := strings.Cut(line, ":"); !found || !overridden[key] {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}
