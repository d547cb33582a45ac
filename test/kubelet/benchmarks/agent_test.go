package benchmarks

import (
	"bufio"
	"context"
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
)

const (
	resource = "contivpp.io/memif"
	// waitTimeout bounds every wait; it is a failure deadline, not a
	// measured or asserted duration.
	waitTimeout = 90 * time.Second
	// stopTimeout bounds the agent's shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
	// readyPollInterval is how often readiness is asked while timing a
	// start: the resolution of the start-to-ready figure.
	readyPollInterval = 2 * time.Millisecond
)

// agentSetup is what a benchmark chooses about its agent.
type agentSetup struct {
	deviceCount int
	// pluginDir is kubelet's device-plugin directory; empty: a private
	// directory, for benchmarks that call the plugin's socket themselves.
	pluginDir string
	// podResourcesSocket and dockerEndpoint are the pod manager's sources;
	// empty: none (pod-resources disabled, Docker at a socket that does not
	// exist).
	podResourcesSocket string
	dockerEndpoint     string
}

// agent is the memif-agent binary with its own config and state
// directories; it can be stopped and started again on the same state.
type agent struct {
	tb           testing.TB
	configDir    string
	pluginSocket string
	apiSocket    string
	logPath      string
	httpAddr     string

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

func newAgent(tb testing.TB, setup agentSetup) *agent {
	tb.Helper()
	// Short paths: unix socket paths must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "bn")
	if err != nil {
		tb.Fatalf("create agent directory: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if setup.pluginDir == "" {
		setup.pluginDir = filepath.Join(dir, "device-plugins")
	}
	if setup.dockerEndpoint == "" {
		setup.dockerEndpoint = "unix://" + filepath.Join(dir, "no-docker.sock")
	}
	a := &agent{
		tb:           tb,
		configDir:    filepath.Join(dir, "config"),
		pluginSocket: filepath.Join(setup.pluginDir, "memif.sock"),
		apiSocket:    filepath.Join(dir, "api", "api.sock"),
		logPath:      filepath.Join(dir, "agent.log"),
		httpAddr:     net.JoinHostPort("127.0.0.1", freePort(tb)),
	}
	files := map[string]string{
		"http.conf": "endpoint: " + a.httpAddr + "\n",
		"devicemanager.conf": fmt.Sprintf("device-count: %d\nplugin-dir: %s\nsocket-root: %s\ncheckpoint-path: %s\n",
			setup.deviceCount, setup.pluginDir, filepath.Join(dir, "memif"), filepath.Join(dir, "state", "checkpoint.json")),
		"nodeapi.conf": "socket-path: " + a.apiSocket + "\n",
		"podmanager.conf": fmt.Sprintf("docker-endpoint: %s\npod-resources-socket: %q\n",
			setup.dockerEndpoint, setup.podResourcesSocket),
	}
	if err := os.MkdirAll(a.configDir, 0o700); err != nil {
		tb.Fatalf("create config directory: %v", err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(a.configDir, name), []byte(content), 0o600); err != nil {
			tb.Fatalf("write %s: %v", name, err)
		}
	}
	tb.Cleanup(func() {
		a.stop()
		if tb.Failed() {
			tb.Logf("agent log %s ends with:\n%s", a.logPath, logTail(a.logPath, 40))
		}
	})
	return a
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

// start runs the agent and returns how long it took from the process
// start to its readiness probe answering 200: the startup resync done.
func (a *agent) start() time.Duration {
	a.tb.Helper()
	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		a.tb.Fatalf("open agent log: %v", err)
	}
	defer logFile.Close()
	a.cmd = exec.Command(filepath.Join(binDir, "memif-agent"), "-config-dir", a.configDir)
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	started := time.Now()
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
	deadline := started.Add(waitTimeout)
	for !a.ready() {
		select {
		case <-exited:
			a.tb.Fatalf("memif-agent exited at start (%v); its log ends with:\n%s", a.waitErr, logTail(a.logPath, 30))
		case <-time.After(readyPollInterval):
		}
		if time.Now().After(deadline) {
			a.tb.Fatalf("memif-agent not ready %s after start; its log ends with:\n%s", waitTimeout, logTail(a.logPath, 30))
		}
	}
	return time.Since(started)
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func (a *agent) ready() bool {
	response, err := httpClient.Get("http://" + a.httpAddr + "/readiness")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, response.Body)
	response.Body.Close()
	return response.StatusCode == http.StatusOK
}

// stop sends SIGTERM and waits for the agent to exit; it does nothing when
// the agent is not running.
func (a *agent) stop() {
	if a.exited == nil {
		return
	}
	select {
	case <-a.exited:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(stopTimeout):
		_ = a.cmd.Process.Kill()
		<-a.exited
		a.tb.Errorf("memif-agent ignored SIGTERM for %s and was killed", stopTimeout)
	}
}

// rssMiB is the agent's resident set size (VmRSS) in MiB.
func (a *agent) rssMiB() float64 {
	a.tb.Helper()
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
	if err != nil {
		a.tb.Fatalf("read the agent's memory status: %v", err)
	}
	defer status.Close()
	lines := bufio.NewScanner(status)
	for lines.Scan() {
		value, found := strings.CutPrefix(lines.Text(), "VmRSS:")
		if !found {
			continue
		}
		kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		if err != nil {
			a.tb.Fatalf("parse VmRSS %q: %v", value, err)
		}
		return kib / 1024
	}
	a.tb.Fatalf("no VmRSS in /proc/%d/status", a.cmd.Process.Pid)
	return 0
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

// allocations lists the agent's allocations, secrets included, by
// allocation ID.
func (a *agent) allocations(ctx context.Context, client memifv1.MemifAgentClient) map[string]*memifv1.MemifAllocation {
	a.tb.Helper()
	response, err := client.ListAllocations(ctx, &memifv1.ListAllocationsRequest{IncludeSecrets: true})
	if err != nil {
		a.tb.Fatalf("ListAllocations: %v", err)
	}
	byID := make(map[string]*memifv1.MemifAllocation, len(response.GetAllocations()))
	for _, allocation := range response.GetAllocations() {
		byID[allocation.GetAllocationId()] = allocation
	}
	return byID
}

// logLinesAbout returns the agent's log lines that mention any of words.
func (a *agent) logLinesAbout(words []string) string {
	content, err := os.ReadFile(a.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", a.logPath, err)
	}
	var matching []string
	for line := range strings.Lines(string(content)) {
		for _, word := range words {
			if strings.Contains(line, word) {
				matching = append(matching, strings.TrimRight(line, "\n"))
				break
			}
		}
	}
	return strings.Join(matching, "\n")
}

func logTail(path string, lines int) string {
	content, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	all := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
