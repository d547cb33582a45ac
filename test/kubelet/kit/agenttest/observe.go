package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/plugins/health/probesocket"
)

var httpClient = &http.Client{
	Timeout: 10 * time.Second,
	// No idle connections: they would show up as agent goroutines and fds.
	Transport: &http.Transport{DisableKeepAlives: true},
}

// Get returns the status code and body of GET path on the agent's HTTP
// server.
func (a *Agent) Get(path string) (int, []byte, error) {
	response, err := httpClient.Get("http://" + a.HTTPAddr + path)
	if err != nil {
		return 0, nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	return response.StatusCode, body, err
}

// probe returns why the probe at path did not pass, asked on the probe
// socket, where kubelet's exec probe (memif-agent probe) asks it.
func (a *Agent) probe(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), httpClient.Timeout)
	defer cancel()
	answer, err := probesocket.Ask(ctx, a.ProbeSocket, path)
	if err != nil {
		return err
	}
	if !answer.Passed() {
		return fmt.Errorf("probe %s answered %d: %s", path, answer.Code, answer.Body)
	}
	return nil
}

// RequireHealthy fails the test unless the readiness and liveness probes
// pass.
func (a *Agent) RequireHealthy() {
	a.tb.Helper()
	if !a.Running() {
		a.tb.Fatalf("memif-agent is not running (%v)", a.waitErr)
	}
	for _, path := range []string{probesocket.ReadinessPath, probesocket.LivenessPath} {
		if err := a.probe(path); err != nil {
			a.tb.Fatal(err)
		}
	}
}

// Resync asks the controller for a full resync (POST /controller/resync);
// the agent must run with -http-allow-changes in Args.
func (a *Agent) Resync() {
	a.tb.Helper()
	response, err := httpClient.Post("http://"+a.HTTPAddr+"/controller/resync", "application/json", nil)
	if err != nil {
		a.tb.Fatalf("POST /controller/resync: %v", err)
	}
	body, _ := io.ReadAll(response.Body)
	response.Body.Close()
	if response.StatusCode != http.StatusOK {
		a.tb.Fatalf("POST /controller/resync answered %d: %s", response.StatusCode, body)
	}
}

// APIClient returns a node API client over the agent's socket.
func (a *Agent) APIClient() memifv1.MemifAgentClient {
	a.tb.Helper()
	return memifv1.NewMemifAgentClient(a.dialUnix(a.APISocket))
}

// PluginClient returns a device plugin client over the plugin's socket,
// as kubelet dials it.
func (a *Agent) PluginClient() pluginapi.DevicePluginClient {
	a.tb.Helper()
	return pluginapi.NewDevicePluginClient(a.dialUnix(a.PluginSocket))
}

// dialUnix returns the test's one connection to socket: polls that asked
// for a client at each try would otherwise hold a connection each until
// the test's end, and the node API closes the connections of a user past
// its max-connections-per-user. The connection comes back after an agent
// restart within a second of the socket answering.
func (a *Agent) dialUnix(socket string) *grpc.ClientConn {
	a.tb.Helper()
	a.connsMu.Lock()
	defer a.connsMu.Unlock()
	if conn, ok := a.conns[socket]; ok {
		return conn
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second}))
	if err != nil {
		a.tb.Fatalf("dial %s: %v", socket, err)
	}
	if a.conns == nil {
		a.conns = map[string]*grpc.ClientConn{}
	}
	a.conns[socket] = conn
	a.tb.Cleanup(func() { conn.Close() })
	return conn
}

// OpenFDs counts the agent's open file descriptors.
func (a *Agent) OpenFDs() int {
	a.tb.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", a.PID()))
	if err != nil {
		a.tb.Fatalf("count agent fds: %v", err)
	}
	return len(entries)
}

// Goroutines reads go_goroutines from the agent's /metrics.
func (a *Agent) Goroutines() int {
	a.tb.Helper()
	code, body, err := a.Get("/metrics")
	if err != nil || code != http.StatusOK {
		a.tb.Fatalf("GET /metrics answered %d: %v", code, err)
	}
	value, found := lineValue(bytes.NewReader(body), "go_goroutines ")
	if !found {
		a.tb.Fatal("/metrics has no go_goroutines")
	}
	n, err := strconv.ParseFloat(value, 64)
	if err != nil {
		a.tb.Fatalf("parse go_goroutines %q: %v", value, err)
	}
	return int(n)
}

// RSSMiB is the agent's resident set size (VmRSS) in MiB.
func (a *Agent) RSSMiB() float64 {
	a.tb.Helper()
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", a.PID()))
	if err != nil {
		a.tb.Fatalf("read the agent's memory status: %v", err)
	}
	defer status.Close()
	value, found := lineValue(status, "VmRSS:")
	if !found {
		a.tb.Fatalf("no VmRSS in /proc/%d/status", a.PID())
	}
	kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
	if err != nil {
		a.tb.Fatalf("parse VmRSS %q: %v", value, err)
	}
	return kib / 1024
}

// lineValue returns the rest of the first line of r that starts with
// prefix.
func lineValue(r io.Reader, prefix string) (string, bool) {
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		if value, found := strings.CutPrefix(lines.Text(), prefix); found {
			return value, true
		}
	}
	return "", false
}

// AllocationDirs lists the directories under the socket root.
func (a *Agent) AllocationDirs() (map[string]bool, error) {
	entries, err := os.ReadDir(a.SocketRoot)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	for _, entry := range entries {
		if entry.IsDir() {
			dirs[filepath.Join(a.SocketRoot, entry.Name())] = true
		}
	}
	return dirs, nil
}
