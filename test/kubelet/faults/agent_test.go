package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/internal/testutil/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kubelettest"
)

const (
	resource = "contivpp.io/memif"
	// waitTimeout bounds every wait; it is a failure deadline, not an
	// asserted duration.
	waitTimeout = 90 * time.Second
	// stopTimeout bounds the agent's shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
)

// agentSetup is what a test chooses about its agent; the zero value is an
// agent with 64 devices, no kubelet pod-resources and no Docker.
type agentSetup struct {
	deviceCount int
	// pluginDir is kubelet's device-plugin directory; empty: a private
	// directory, for tests that call the plugin's socket themselves.
	pluginDir string
	// podResourcesSocket and dockerEndpoint are the pod manager's sources;
	// empty: none (pod-resources disabled, Docker at a socket that does not
	// exist).
	podResourcesSocket string
	dockerEndpoint     string
	// socketRoot overrides the allocation directories' root.
	socketRoot string
	// devicemanager and nodeapi are extra lines of those config files.
	devicemanager string
	nodeapi       string
}

// agent is one memif-agent binary with its config and state directories.
// It may be started, killed and started again; its log accumulates every
// run.
type agent struct {
	tb             testing.TB
	dir            string
	configDir      string
	pluginDir      string
	pluginSocket   string
	socketRoot     string
	checkpointPath string
	apiSocket      string
	logPath        string
	httpAddr       string
	// args are extra command-line arguments.
	args []string

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// newAgent writes the agent's config files; start runs it.
func newAgent(tb testing.TB, setup agentSetup) *agent {
	tb.Helper()
	// Short paths: unix socket paths must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "ft")
	if err != nil {
		tb.Fatalf("create agent directory: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	a := &agent{
		tb:             tb,
		dir:            dir,
		configDir:      filepath.Join(dir, "config"),
		pluginDir:      setup.pluginDir,
		socketRoot:     setup.socketRoot,
		checkpointPath: filepath.Join(dir, "state", "checkpoint.json"),
		apiSocket:      filepath.Join(dir, "api", "api.sock"),
		logPath:        filepath.Join(dir, "agent.log"),
		httpAddr:       net.JoinHostPort("127.0.0.1", freePort(tb)),
	}
	if a.pluginDir == "" {
		a.pluginDir = filepath.Join(dir, "device-plugins")
	}
	a.pluginSocket = filepath.Join(a.pluginDir, "memif.sock")
	if a.socketRoot == "" {
		a.socketRoot = filepath.Join(dir, "memif")
	}
	if setup.dockerEndpoint == "" {
		setup.dockerEndpoint = "unix://" + filepath.Join(dir, "no-docker.sock")
	}
	files := map[string]string{
		"http.conf":          "endpoint: " + a.httpAddr + "\n",
		"devicemanager.conf": a.deviceManagerConfig(setup),
		"nodeapi.conf":       "socket-path: " + a.apiSocket + "\n" + setup.nodeapi,
		"podmanager.conf": fmt.Sprintf("docker-endpoint: %s\npod-resources-socket: %q\n",
			setup.dockerEndpoint, setup.podResourcesSocket),
	}
	writeConfig(tb, a.configDir, files)
	tb.Cleanup(func() {
		a.kill()
		if content, err := os.ReadFile(a.logPath); err == nil && bytes.Contains(content, []byte("WARNING: DATA RACE")) {
			tb.Errorf("the race detector found a data race in memif-agent; see %s", a.logPath)
			keepLog(tb, a.logPath)
		}
		if tb.Failed() {
			tb.Logf("agent log %s ends with:\n%s", a.logPath, logTail(a.logPath, 40))
		}
	})
	return a
}

// deviceManagerConfig is devicemanager.conf for setup, with the agent's
// paths.
func (a *agent) deviceManagerConfig(setup agentSetup) string {
	if setup.deviceCount == 0 {
		setup.deviceCount = 64
	}
	return fmt.Sprintf("device-count: %d\nplugin-dir: %s\nsocket-root: %s\ncheckpoint-path: %s\n%s",
		setup.deviceCount, a.pluginDir, a.socketRoot, a.checkpointPath, setup.devicemanager)
}

// setDeviceManagerConfig rewrites devicemanager.conf for the next start.
func (a *agent) setDeviceManagerConfig(setup agentSetup) {
	a.tb.Helper()
	writeConfig(a.tb, a.configDir, map[string]string{"devicemanager.conf": a.deviceManagerConfig(setup)})
}

func writeConfig(tb testing.TB, configDir string, files map[string]string) {
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

func freePort(tb testing.TB) string {
	tb.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("find a free loopback port: %v", err)
	}
	defer listener.Close()
	_, port, _ := net.SplitHostPort(listener.Addr().String())
	return port
}

// launch runs the agent without waiting for it; the log file is appended.
func (a *agent) launch() {
	a.tb.Helper()
	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		a.tb.Fatalf("open agent log: %v", err)
	}
	defer logFile.Close()
	a.cmd = exec.Command(filepath.Join(binDir, "memif-agent"), append([]string{"-config-dir", a.configDir}, a.args...)...)
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	if err := a.cmd.Start(); err != nil {
		a.tb.Fatalf("start memif-agent: %v", err)
	}
	exited := make(chan struct{})
	a.exited = exited
	cmd := a.cmd
	go func() {
		a.waitErr = cmd.Wait()
		close(exited)
	}()
}

// start runs the agent and waits until its readiness probe answers 200 and
// its device plugin socket is there.
func (a *agent) start() {
	a.tb.Helper()
	a.launch()
	poll.Until(a.tb, waitTimeout, "memif-agent ready", func() error {
		select {
		case <-a.exited:
			a.tb.Fatalf("memif-agent exited at start (%v); its log ends with:\n%s", a.waitErr, logTail(a.logPath, 30))
		default:
		}
		if _, err := os.Stat(a.pluginSocket); err != nil {
			return fmt.Errorf("no device plugin socket: %w", err)
		}
		if code, _, err := a.get("/readiness"); err != nil || code != http.StatusOK {
			return fmt.Errorf("readiness answered %d (%v)", code, err)
		}
		return nil
	})
}

// running tells whether the last started process has not exited.
func (a *agent) running() bool {
	if a.exited == nil {
		return false
	}
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (a *agent) kill() {
	if !a.running() {
		return
	}
	_ = a.cmd.Process.Kill()
	<-a.exited
}

// stop sends SIGTERM and waits; an agent that ignores it fails the test.
func (a *agent) stop() {
	a.tb.Helper()
	if !a.running() {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(stopTimeout):
		a.kill()
		a.tb.Fatalf("memif-agent ignored SIGTERM for %s", stopTimeout)
	}
}

// waitExit waits for an agent expected to stop by itself (a refused
// config) and returns its exit error.
func (a *agent) waitExit() error {
	a.tb.Helper()
	select {
	case <-a.exited:
		return a.waitErr
	case <-time.After(waitTimeout):
		a.kill()
		a.tb.Fatalf("memif-agent still running %s after start", waitTimeout)
		return nil
	}
}

var httpClient = &http.Client{
	Timeout: 10 * time.Second,
	// No idle connections: they would show up as agent goroutines and fds.
	Transport: &http.Transport{DisableKeepAlives: true},
}

// get returns the status code and body of GET path on the agent's HTTP
// server.
func (a *agent) get(path string) (int, []byte, error) {
	response, err := httpClient.Get("http://" + a.httpAddr + path)
	if err != nil {
		return 0, nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	return response.StatusCode, body, err
}

// requireHealthy fails the test unless readiness and liveness answer 200.
func (a *agent) requireHealthy() {
	a.tb.Helper()
	if !a.running() {
		a.tb.Fatalf("memif-agent is not running (%v)", a.waitErr)
	}
	for _, path := range []string{"/readiness", "/liveness"} {
		code, body, err := a.get(path)
		if err != nil || code != http.StatusOK {
			a.tb.Fatalf("GET %s answered %d (%v): %s", path, code, err, body)
		}
	}
}

// resync asks the controller for a full resync (POST /controller/resync).
func (a *agent) resync() {
	a.tb.Helper()
	response, err := httpClient.Post("http://"+a.httpAddr+"/controller/resync", "application/json", nil)
	if err != nil {
		a.tb.Fatalf("POST /controller/resync: %v", err)
	}
	body, _ := io.ReadAll(response.Body)
	response.Body.Close()
	if response.StatusCode != http.StatusOK {
		a.tb.Fatalf("POST /controller/resync answered %d: %s", response.StatusCode, body)
	}
}

// log returns everything the agent has logged so far.
func (a *agent) log() string {
	a.tb.Helper()
	content, err := os.ReadFile(a.logPath)
	if err != nil {
		a.tb.Fatalf("read agent log: %v", err)
	}
	return string(content)
}

func logTail(path string, lines int) string {
	content, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	all := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// memifctlAllocation is one allocation in `memifctl -o json` output.
type memifctlAllocation struct {
	AllocationID    string   `json:"allocationId"`
	DeviceIDs       []string `json:"deviceIds"`
	PodNamespace    string   `json:"podNamespace"`
	PodName         string   `json:"podName"`
	HostSocket      string   `json:"hostSocket"`
	HostDir         string   `json:"hostDir"`
	ContainerSocket string   `json:"containerSocket"`
	Secret          string   `json:"secret"`
}

// list runs the real memifctl: every allocation, with secrets, by
// allocation ID.
func (a *agent) list() map[string]memifctlAllocation {
	a.tb.Helper()
	cmd := exec.Command(filepath.Join(binDir, "memifctl"), "-socket", a.apiSocket, "-o", "json", "--show-secrets", "list")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		a.tb.Fatalf("memifctl list: %v: %s", err, stderr.String())
	}
	var allocations []memifctlAllocation
	if err := json.Unmarshal(out, &allocations); err != nil {
		a.tb.Fatalf("decode memifctl list output %q: %v", out, err)
	}
	byID := make(map[string]memifctlAllocation, len(allocations))
	for _, allocation := range allocations {
		byID[allocation.AllocationID] = allocation
	}
	return byID
}

// apiClient returns a node API client over the agent's socket.
func (a *agent) apiClient() memifv1.MemifAgentClient {
	a.tb.Helper()
	return memifv1.NewMemifAgentClient(dialUnix(a.tb, a.apiSocket))
}

// pluginClient returns a device plugin client over the plugin's socket, as
// kubelet dials it.
func (a *agent) pluginClient() pluginapi.DevicePluginClient {
	a.tb.Helper()
	return pluginapi.NewDevicePluginClient(dialUnix(a.tb, a.pluginSocket))
}

func dialUnix(tb testing.TB, socket string) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatalf("dial %s: %v", socket, err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// allocate calls the plugin's Allocate for one container asking ids.
func allocate(ctx context.Context, client pluginapi.DevicePluginClient, ids ...string) (*pluginapi.ContainerAllocateResponse, error) {
	response, err := client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}},
	})
	if err != nil {
		return nil, err
	}
	if len(response.GetContainerResponses()) != 1 {
		return nil, fmt.Errorf("Allocate answered %d container responses for one request", len(response.GetContainerResponses()))
	}
	return response.GetContainerResponses()[0], nil
}

// deviceID is the agent's ID of device n (64..999 devices).
func deviceID(n int) string { return fmt.Sprintf("memif-%03d", n) }

// openFDs counts the agent's open file descriptors.
func (a *agent) openFDs() int {
	a.tb.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", a.cmd.Process.Pid))
	if err != nil {
		a.tb.Fatalf("count agent fds: %v", err)
	}
	return len(entries)
}

// goroutines reads go_goroutines from the agent's /metrics.
func (a *agent) goroutines() int {
	a.tb.Helper()
	code, body, err := a.get("/metrics")
	if err != nil || code != http.StatusOK {
		a.tb.Fatalf("GET /metrics answered %d: %v", code, err)
	}
	scanner := bufio.NewScanner(bytes.NewReader(body))
	for scanner.Scan() {
		if value, found := strings.CutPrefix(scanner.Text(), "go_goroutines "); found {
			n, err := strconv.ParseFloat(value, 64)
			if err != nil {
				a.tb.Fatalf("parse go_goroutines %q: %v", value, err)
			}
			return int(n)
		}
	}
	a.tb.Fatal("/metrics has no go_goroutines")
	return 0
}

// allocationDirs lists the directories under the socket root.
func (a *agent) allocationDirs() (map[string]bool, error) {
	entries, err := os.ReadDir(a.socketRoot)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	for _, entry := range entries {
		if entry.IsDir() {
			dirs[filepath.Join(a.socketRoot, entry.Name())] = true
		}
	}
	return dirs, nil
}

// startKubelet starts kubelet's device manager and pod-resources server;
// it is stopped when the test ends.
func startKubelet(tb testing.TB) (*kubelettest.Kubelet, string) {
	tb.Helper()
	dir, err := os.MkdirTemp("", "fk")
	if err != nil {
		tb.Fatalf("create kubelet directory: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "pod-resources.sock")
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	kubelet, err := kubelettest.Start(ctx, socket)
	if err != nil {
		tb.Fatalf("start kubelet: %v", err)
	}
	tb.Cleanup(func() {
		if err := kubelet.Stop(); err != nil {
			tb.Errorf("stop kubelet: %v", err)
		}
	})
	return kubelet, socket
}

func waitCapacity(tb testing.TB, kubelet *kubelettest.Kubelet, want int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := kubelet.WaitForCapacity(ctx, resource, want); err != nil {
		tb.Fatal(err)
	}
}

// keepLog copies an agent log out of the directory the test removes.
func keepLog(tb testing.TB, path string) {
	content, err := os.ReadFile(path)
	if err != nil {
		return
	}
	kept, err := os.CreateTemp("", "memif-agent-race-*.log")
	if err != nil {
		return
	}
	defer kept.Close()
	if _, err := kept.Write(content); err == nil {
		tb.Logf("agent log kept at %s", kept.Name())
	}
}
