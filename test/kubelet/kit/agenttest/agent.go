package agenttest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/fakepodresources"
	"github.com/contivpp/memif-agent/test/kit/loopback"
)

const (
	// WaitTimeout bounds every wait for the agent; it is a failure
	// deadline, not a measured or asserted duration.
	WaitTimeout = 90 * time.Second
	// stopTimeout bounds the agent's shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
	// defaultDeviceCount is the devices of a Setup that names none.
	defaultDeviceCount = 64
	// defaultReadyPoll is how often Start asks whether the agent is ready.
	defaultReadyPoll = 20 * time.Millisecond
)

// Setup is what a test chooses about its agent; the zero value is an agent
// with 64 devices registered with a fake kubelet registration server, the
// fake pod-resources API (no pods) as its pod source and no Docker.
type Setup struct {
	DeviceCount int
	// PluginDir is kubelet's device-plugin directory; empty: a private
	// directory, for tests that call the plugin's socket themselves.
	PluginDir string
	// PodResourcesSocket and DockerEndpoint are the pod manager's sources;
	// both empty: the fake pod-resources API listing no pod, and Docker at a
	// socket that does not exist.
	PodResourcesSocket string
	DockerEndpoint     string
	// SocketRoot overrides the allocation directories' root.
	SocketRoot string
	// DeviceManager and NodeAPI are extra lines of those config files.
	DeviceManager string
	NodeAPI       string
	// ReadyPoll is how often Start asks for readiness, the resolution of
	// the start-to-ready time it returns; zero: 20ms.
	ReadyPoll time.Duration
}

// Agent is one memif-agent binary with its config and state directories.
// It may be started, killed and started again on the same state; its log
// accumulates every run.
type Agent struct {
	ConfigDir      string
	PluginDir      string
	PluginSocket   string
	SocketRoot     string
	CheckpointPath string
	// DeviceInfoDir is the device-info files' directory.
	DeviceInfoDir string
	APISocket     string
	// ProbeSocket is where the agent serves the probes kubelet asks
	// (memif-agent probe).
	ProbeSocket string
	LogPath     string
	HTTPAddr    string
	// MetricsAddr is where the metrics listener (metrics.conf) serves: a
	// free loopback port, so that agents side by side do not meet on the
	// default 9752.
	MetricsAddr string
	// Args are extra command-line arguments of the next start.
	Args []string

	tb        testing.TB
	readyPoll time.Duration
	cmd       *exec.Cmd
	exited    chan struct{}
	waitErr   error

	// conns are the test's connections to the agent's sockets, by path
	// (dialUnix).
	connsMu sync.Mutex
	conns   map[string]*grpc.ClientConn
}

// New writes the agent's config files; Start runs it. The agent is killed
// when the test ends.
func New(tb testing.TB, setup Setup) *Agent {
	tb.Helper()
	// Short paths: unix socket paths must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "ag")
	if err != nil {
		tb.Fatalf("create agent directory: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	a := newPaths(tb, dir, setup)
	a.standIns(tb, dir, &setup)
	if setup.DockerEndpoint == "" {
		setup.DockerEndpoint = "unix://" + filepath.Join(dir, "no-docker.sock")
	}
	WriteConfig(tb, a.ConfigDir, map[string]string{
		"http.conf":          "endpoint: " + a.HTTPAddr + "\n",
		"metrics.conf":       metricsConfig(tb, a.MetricsAddr),
		"devicemanager.conf": a.DeviceManagerConfig(setup),
		"nodeapi.conf":       "socket-path: " + a.APISocket + "\n" + setup.NodeAPI,
		"health.conf":        "probe-socket: " + a.ProbeSocket + "\n",
		"podmanager.conf": fmt.Sprintf("docker-endpoint: %s\npod-resources-socket: %q\n",
			setup.DockerEndpoint, setup.PodResourcesSocket),
	})
	tb.Cleanup(a.cleanup)
	return a
}

// standIns gives an agent the kubelet a test does not run: the agent is
// ready only once registered with kubelet and a pod source answers. With
// no PluginDir the fake registration server (fakekubelet) serves the
// private plugin directory; with no pod source the fake pod-resources API
// (fakepodresources) lists no pod.
func (a *Agent) standIns(tb testing.TB, dir string, setup *Setup) {
	tb.Helper()
	if setup.PluginDir == "" {
		fakekubelet.StartForAgent(tb, a.PluginDir)
	}
	if setup.PodResourcesSocket == "" && setup.DockerEndpoint == "" {
		setup.PodResourcesSocket = filepath.Join(dir, "pod-resources.sock")
		fakepodresources.Serve(tb, setup.PodResourcesSocket)
	}
}

// newPaths lays the agent's files out under dir.
func newPaths(tb testing.TB, dir string, setup Setup) *Agent {
	a := &Agent{
		ConfigDir:      filepath.Join(dir, "config"),
		PluginDir:      setup.PluginDir,
		SocketRoot:     setup.SocketRoot,
		CheckpointPath: filepath.Join(dir, "state", "checkpoint.json"),
		DeviceInfoDir:  filepath.Join(dir, "devinfo"),
		APISocket:      filepath.Join(dir, "api", "api.sock"),
		ProbeSocket:    filepath.Join(dir, "api", "probe.sock"),
		LogPath:        filepath.Join(dir, "agent.log"),
		HTTPAddr:       net.JoinHostPort("127.0.0.1", loopback.FreePort(tb)),
		MetricsAddr:    net.JoinHostPort("127.0.0.1", loopback.FreePort(tb)),
		tb:             tb,
		readyPoll:      setup.ReadyPoll,
	}
	if a.PluginDir == "" {
		a.PluginDir = filepath.Join(dir, "device-plugins")
	}
	a.PluginSocket = filepath.Join(a.PluginDir, "memif.sock")
	if a.SocketRoot == "" {
		a.SocketRoot = filepath.Join(dir, "memif")
	}
	if a.readyPoll == 0 {
		a.readyPoll = defaultReadyPoll
	}
	return a
}

// cleanup kills the agent, fails the test on a data race the agent
// reported and logs the log's tail of a failed test.
func (a *Agent) cleanup() {
	a.Kill()
	if content, err := os.ReadFile(a.LogPath); err == nil && bytes.Contains(content, []byte("WARNING: DATA RACE")) {
		a.tb.Errorf("the race detector found a data race in memif-agent; see %s", a.LogPath)
	}
	if a.tb.Failed() {
		a.tb.Logf("agent log %s ends with:\n%s", a.LogPath, a.LogTail(40))
		keepLog(a.tb, a.LogPath)
	}
}

// DeviceManagerConfig is devicemanager.conf for setup, with the agent's
// paths.
func (a *Agent) DeviceManagerConfig(setup Setup) string {
	if setup.DeviceCount == 0 {
		setup.DeviceCount = defaultDeviceCount
	}
	return fmt.Sprintf("device-count: %d\nplugin-dir: %s\nsocket-root: %s\ncheckpoint-path: %s\ndevice-info-dir: %s\n%s",
		setup.DeviceCount, a.PluginDir, a.SocketRoot, a.CheckpointPath, a.DeviceInfoDir, setup.DeviceManager)
}

// SetDeviceManagerConfig rewrites devicemanager.conf for the next start.
func (a *Agent) SetDeviceManagerConfig(setup Setup) {
	a.tb.Helper()
	WriteConfig(a.tb, a.ConfigDir, map[string]string{"devicemanager.conf": a.DeviceManagerConfig(setup)})
}

// WriteConfig writes files (name: content) into configDir, replacing what
// is there.
func WriteConfig(tb testing.TB, configDir string, files map[string]string) {
	tb.Helper()
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		tb.Fatalf("create config directory: %v", err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(configDir, name), []byte(content), 0o600); err != nil {
			tb.Fatalf("write %s: %v", name, err)
		}
	}
}

// keepLog copies an agent log out of the directory the test removes.
func keepLog(tb testing.TB, path string) {
	content, err := os.ReadFile(path)
	if err != nil {
		return
	}
	kept, err := os.CreateTemp("", "memif-agent-*.log")
	if err != nil {
		return
	}
	defer kept.Close()
	if _, err := kept.Write(content); err == nil {
		tb.Logf("agent log kept at %s", kept.Name())
	}
}

// metricsConfig is metrics.conf serving on addr (host:port).
func metricsConfig(tb testing.TB, addr string) string {
	tb.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatalf("metrics address %s: %v", addr, err)
	}
	return "address: " + host + "\nport: " + port + "\n"
}
