package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/plugins/devicemanager"
	"github.com/contivpp/memif-agent/test/kit/connflood"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/fakepodresources"
	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/procnet"
	"github.com/contivpp/memif-agent/test/kit/syncbuffer"
)

// agentBinary is built once per test binary by TestMain.
var agentBinary string

func TestMain(m *testing.M) {
	connflood.RunIfAsked()
	if os.Getenv(pluginOrderEnv) != "" {
		os.Exit(printPluginOrder())
	}
	dir, err := os.MkdirTemp("", "memif-agent-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBinary = filepath.Join(dir, "memif-agent")
	build := exec.Command("go", "build", "-race", "-o", agentBinary, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building memif-agent:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runningAgent is one memif-agent process started by a test.
type runningAgent struct {
	cmd      *exec.Cmd
	log      *syncbuffer.Buffer
	httpPort string
	// exited is closed once the process has been waited for; exitErr is
	// Wait's result from then on.
	exited  chan struct{}
	exitErr error
}

// standIns serves, under root, the kubelet the agent is not ready without:
// the fake registration server in device-plugins/ and the fake
// pod-resources API at pod-resources/kubelet.sock.
func standIns(t *testing.T, root string) {
	t.Helper()
	for _, dir := range []string{"device-plugins", "pod-resources"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	registry, err := fakekubelet.Start(filepath.Join(root, "device-plugins"), "kubelet.sock")
	if err != nil {
		t.Fatalf("fake kubelet registration server: %v", err)
	}
	t.Cleanup(registry.Stop)
	fakepodresources.Serve(t, filepath.Join(root, "pod-resources", "kubelet.sock"))
}

// TestAgentNotReadyUntilKubeletServes: an agent whose kubelet is not there
// is alive but not ready, says why in /readiness and once in its log at the
// default level, and becomes ready when kubelet comes.
func TestAgentNotReadyUntilKubeletServes(t *testing.T) {
	configDir := agentConfigDir(t, nil)
	root := filepath.Dir(configDir)
	// agentConfigDir's kubelet goes away before the agent starts.
	for _, path := range []string{filepath.Join(root, "device-plugins", "kubelet.sock"), filepath.Join(root, "pod-resources", "kubelet.sock")} {
		if err := os.Rename(path, path+".away"); err != nil {
			t.Fatal(err)
		}
	}
	agent := startAgent(t, configDir)
	url := "http://" + net.JoinHostPort("127.0.0.1", agent.httpPort) + "/readiness"
	// Waits for a failed registration: before its first attempt the agent
	// is not ready either, but has nothing to say about kubelet yet.
	failed := "not registered with kubelet at " + filepath.Join(root, "device-plugins", "kubelet.sock")
	poll.Until(t, 60*time.Second, "readiness naming the failed registration with kubelet", func() error {
		response, err := http.Get(url)
		if err != nil {
			return err
		}
		defer response.Body.Close()
		body, err := io.ReadAll(response.Body)
		if err != nil {
			return err
		}
		if response.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), failed) {
			return fmt.Errorf("readiness answers %s %s", response.Status, body)
		}
		return nil
	})
	for _, path := range []string{filepath.Join(root, "device-plugins", "kubelet.sock"), filepath.Join(root, "pod-resources", "kubelet.sock")} {
		if err := os.Rename(path+".away", path); err != nil {
			t.Fatal(err)
		}
	}
	agent.waitReady(t)
	if err := agent.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-agent.exited
	if n := strings.Count(agent.log.String(), "cannot register with kubelet"); n != 1 {
		t.Errorf("the agent said %d times at the default level that it cannot register, want once", n)
	}
}

// agentConfigDir returns a config dir whose files keep every path the agent
// touches (kubelet's plugin dir, socket root, checkpoint, API and probe
// sockets, Docker and pod-resources endpoints) inside a temp dir; extra files are added.
func agentConfigDir(t *testing.T, extra map[string]string) string {
	t.Helper()
	// Short: unix socket paths must fit in 108 bytes.
	root, err := os.MkdirTemp("", "ma")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	standIns(t, root)
	files := map[string]string{
		"devicemanager.conf": fmt.Sprintf("plugin-dir: %[1]s/device-plugins\nsocket-root: %[1]s/memif\ncheckpoint-path: %[1]s/state/checkpoint.json\ndevice-info-dir: %[1]s/devinfo\n", root),
		"podmanager.conf":    fmt.Sprintf("docker-endpoint: unix://%[1]s/docker.sock\npod-resources-socket: %[1]s/pod-resources/kubelet.sock\n", root),
		"nodeapi.conf":       fmt.Sprintf("socket-path: %s/api/api.sock\n", root),
		"health.conf":        fmt.Sprintf("probe-socket: %s/api/probe.sock\n", root),
		// A free port: agents side by side must not meet on 9752.
		"metrics.conf": "address: 127.0.0.1\nport: " + loopback.FreePort(t) + "\n",
	}
	for name, content := range extra {
		files[name] = content
	}
	configDir := filepath.Join(root, "config")
	if err := os.Mkdir(configDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(configDir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return configDir
}

func startAgent(t *testing.T, configDir string, args ...string) *runningAgent {
	t.Helper()
	return startAgentIn(t, "", configDir, args...)
}

// startAgentIn starts the agent in the working directory workDir ("": the
// test's).
func startAgentIn(t *testing.T, workDir, configDir string, args ...string) *runningAgent {
	t.Helper()
	agent := &runningAgent{log: &syncbuffer.Buffer{}, httpPort: loopback.FreePort(t), exited: make(chan struct{})}
	args = append([]string{"-config-dir", configDir, "-http-port", agent.httpPort}, args...)
	agent.cmd = exec.Command(agentBinary, args...)
	agent.cmd.Dir = workDir
	agent.cmd.Stdout, agent.cmd.Stderr = agent.log, agent.log
	if err := agent.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		agent.exitErr = agent.cmd.Wait()
		close(agent.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-agent.exited:
		default:
			agent.cmd.Process.Kill()
			<-agent.exited
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", agent.log.String())
		}
	})
	return agent
}

// waitReady polls the readiness probe until it answers 200.
func (a *runningAgent) waitReady(t *testing.T) {
	t.Helper()
	url := "http://" + net.JoinHostPort("127.0.0.1", a.httpPort) + "/readiness"
	poll.Until(t, 60*time.Second, "readiness at "+url+" answering 200", func() error {
		select {
		case <-a.exited:
			t.Fatalf("agent exited before it was ready: %v", a.exitErr)
		default:
		}
		response, err := http.Get(url)
		if err != nil {
			return err
		}
		response.Body.Close()
		if response.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", response.Status)
		}
		return nil
	})
}

// listeningAddresses returns the local addresses of the TCP sockets the
// process listens on, read from /proc.
func listeningAddresses(t *testing.T, pid int) []string {
	t.Helper()
	addresses, err := procnet.ListeningTCP(pid)
	if err != nil {
		t.Fatal(err)
	}
	return addresses
}

func TestAgentListensOnlyOnLoopback(t *testing.T) {
	agent := startAgent(t, agentConfigDir(t, nil))
	agent.waitReady(t)

	addresses := listeningAddresses(t, agent.cmd.Process.Pid)
	if len(addresses) == 0 {
		t.Fatal("agent listens on no TCP address; want its HTTP server on loopback")
	}
	for _, address := range addresses {
		host, _, _ := net.SplitHostPort(address)
		if !net.ParseIP(host).IsLoopback() {
			t.Errorf("agent listens on %s; want loopback only by default", address)
		}
	}
}

// TestAgentStopsCleanlyOnSignal: SIGTERM, SIGINT and SIGHUP (the terminal
// that started it went away) stop the agent cleanly, its sockets removed.
func TestAgentStopsCleanlyOnSignal(t *testing.T) {
	for _, signal := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(signal.String(), func(t *testing.T) {
			configDir := agentConfigDir(t, nil)
			root := filepath.Dir(configDir)
			agent := startAgent(t, configDir)
			agent.waitReady(t)
			sockets := []string{filepath.Join(root, "device-plugins", "memif.sock"), filepath.Join(root, "api", "api.sock"), filepath.Join(root, "api", "probe.sock")}
			for _, socket := range sockets {
				if _, err := os.Stat(socket); err != nil {
					t.Fatalf("socket of the running agent: %v", err)
				}
			}
			if err := agent.cmd.Process.Signal(signal); err != nil {
				t.Fatal(err)
			}
			select {
			case <-agent.exited:
				// A stop that overran the agent's own shutdown timeout exits non-zero.
				if agent.exitErr != nil {
					t.Fatalf("agent did not stop cleanly on %s: %v", signal, agent.exitErr)
				}
			case <-time.After(time.Minute):
				t.Fatalf("agent still running a minute after %s", signal)
			}
			if !strings.Contains(agent.log.String(), "Agent stopped") {
				t.Errorf("agent log lacks the clean-stop line %q", "Agent stopped")
			}
			for _, socket := range sockets {
				if _, err := os.Stat(socket); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("socket %s after %s: %v; want it removed", socket, signal, err)
				}
			}
		})
	}
}

// TestAgentHTTPChangesOffByDefault: any local user reaches the HTTP port,
// so what changes the agent answers 403 unless -http-allow-changes is set.
func TestAgentHTTPChangesOffByDefault(t *testing.T) {
	cases := []struct {
		name         string
		args         []string
		method, path string
		want         int
	}{
		{"resync refused", nil, http.MethodPost, "/controller/resync", http.StatusForbidden},
		{"log level refused", nil, http.MethodPut, "/log/controller/debug", http.StatusForbidden},
		{"scheduler resync refused", nil, http.MethodPost, "/scheduler/downstream-resync", http.StatusForbidden},
		{"history served", nil, http.MethodGet, "/controller/event-history", http.StatusOK},
		{"resync allowed", []string{"-http-allow-changes"}, http.MethodPost, "/controller/resync", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			agent := startAgent(t, agentConfigDir(t, nil), tc.args...)
			agent.waitReady(t)
			request, err := http.NewRequest(tc.method, "http://"+net.JoinHostPort("127.0.0.1", agent.httpPort)+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			response, err := http.DefaultClient.Do(request)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(response.Body)
			response.Body.Close()
			if response.StatusCode != tc.want {
				t.Fatalf("%s %s answered %d %s; want %d", tc.method, tc.path, response.StatusCode, body, tc.want)
			}
			if tc.want == http.StatusForbidden && !strings.Contains(string(body), "-http-allow-changes") {
				t.Errorf("the refusal %q does not say how to allow changes", body)
			}
		})
	}
}

// TestAgentHTTPEndpointFromConfigFile: the agent listens on http.conf's
// endpoint and on metrics.conf's, nowhere else.
func TestAgentHTTPEndpointFromConfigFile(t *testing.T) {
	port, metricsPort := loopback.FreePort(t), loopback.FreePort(t)
	configDir := agentConfigDir(t, map[string]string{"http.conf": "endpoint: " + net.JoinHostPort("127.0.0.2", port) + "\n",
		"metrics.conf": "address: 127.0.0.3\nport: " + metricsPort + "\n"})
	agent := startAgent(t, configDir)
	agent.httpPort = port
	httpEndpoint := net.JoinHostPort("127.0.0.2", port)
	var addresses []string
	// The HTTP server starts last.
	poll.Until(t, 60*time.Second, "the agent listening on the endpoint of http.conf", func() error {
		if addresses = listeningAddresses(t, agent.cmd.Process.Pid); !slices.Contains(addresses, httpEndpoint) {
			return fmt.Errorf("it listens on %v", addresses)
		}
		return nil
	})
	want := []string{httpEndpoint, net.JoinHostPort("127.0.0.3", metricsPort)}
	if slices.Sort(addresses); !slices.Equal(addresses, want) {
		t.Fatalf("agent listens on %v; want only %s from http.conf and %s from metrics.conf", addresses, want[0], want[1])
	}
}

func TestAgentRefusesInvalidConfigNamingTheKey(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string
		wantKey string
	}{
		{"device count zero", "devicemanager.conf", "device-count: 0\n", "device-count"},
		{"misspelt controller key", "controller.conf", "event-queue-sise: 10\n", "event-queue-sise"},
		{"bad API socket mode", "nodeapi.conf", "socket-mode: \"rw\"\n", "socket-mode"},
		{"bad reconcile period", "podmanager.conf", "reconcile-period: soon\n", "reconcile-period"},
		{"negative memif MTU", "memifwiring.conf", "mtu: -1\n", "mtu"},
		{"misspelt vswitch key", "vswitch.conf", "vpp-api-sockt: /run/vpp/api.sock\n", "vpp-api-sockt"},
		{"misspelt HTTP key", "http.conf", "endpiont: 127.0.0.1:9191\n", "endpiont"},
		{"misspelt logs key", "logs.conf", "default-levle: debug\n", "default-levle"},
		{"misspelt scheduler key", "kvscheduler.conf", "record-transaction-histroy: true\n", "record-transaction-histroy"},
		{"scheduler value of the wrong type", "kvscheduler.conf", "transaction-history-age-limit: soon\n", "transaction-history-age-limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			configDir := agentConfigDir(t, map[string]string{tc.file: tc.content})
			agent := startAgent(t, configDir)
			select {
			case <-agent.exited:
				if agent.exitErr == nil {
					t.Fatalf("agent exited 0 with invalid %s; want a failure", tc.file)
				}
			case <-time.After(time.Minute):
				t.Fatalf("agent still running a minute after start with invalid %s", tc.file)
			}
			want := fmt.Sprintf("config file %s: config key %q", filepath.Join(configDir, tc.file), tc.wantKey)
			if !strings.Contains(agent.log.String(), want) {
				t.Errorf("agent log does not name the file and the bad key with %s:\n%s", want, agent.log.String())
			}
		})
	}
}

func TestCommandLineHelpAndBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{"--help", []string{"--help"}, 0, []string{"Usage: memif-agent [flags]", "-config-dir", "-devicemanager-config", "Config files: http.conf, logs.conf,"}},
		{"-h", []string{"-h"}, 0, []string{"Usage: memif-agent [flags]"}},
		{"unknown flag", []string{"-no-such-flag"}, 2, []string{"flag provided but not defined: -no-such-flag", "Usage: memif-agent [flags]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(agentBinary, tc.args...)
			cmd.Dir = t.TempDir()
			out, err := cmd.CombinedOutput()
			code := 0
			if exitErr, ok := err.(*exec.ExitError); ok {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatalf("run memif-agent %v: %v", tc.args, err)
			}
			if code != tc.wantCode {
				t.Errorf("memif-agent %v exited %d, want %d; it printed:\n%s", tc.args, code, tc.wantCode, out)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(string(out), want) {
					t.Errorf("memif-agent %v printed:\n%s\nwant it to contain %q", tc.args, out, want)
				}
			}
		})
	}
}

// TestOneAgentPerNode: an agent started beside a running one (its
// DaemonSet pod replaced while the old one terminates) waits for it before
// it touches the checkpoint or listens, and gives up, naming the holder,
// when it does not exit.
func TestOneAgentPerNode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		firstExits bool
	}{
		{"the first exits", true},
		{"the first stays", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configDir := agentConfigDir(t, nil)
			first := startAgent(t, configDir)
			first.waitReady(t)
			second := startAgent(t, configDir)
			checkpoint := filepath.Join(filepath.Dir(configDir), "state", "checkpoint.json")
			lockPath := checkpoint + ".lock"
			waiting := []string{`msg="waiting for the memif-agent holding the node lock to exit"`,
				fmt.Sprintf(`holder="pid %d on `, first.cmd.Process.Pid), "lock=" + lockPath + " ", fmt.Sprintf("upTo=%v", devicemanager.NodeLockWait)}
			poll.Until(t, 60*time.Second, "the second agent saying it waits for the first", func() error {
				for _, line := range strings.Split(second.log.String(), "\n") {
					if !slices.ContainsFunc(waiting, func(part string) bool { return !strings.Contains(line, part) }) {
						return nil
					}
				}
				return errors.New("not yet")
			})
			if open := socketsAndCheckpoint(t, second.cmd.Process.Pid, checkpoint); len(open) != 0 {
				t.Errorf("the waiting agent has open %v; want no socket and no checkpoint file", open)
			}
			if !tc.firstExits {
				select {
				case <-second.exited:
				case <-time.After(2 * time.Minute):
					t.Fatal("the second agent still runs two minutes after it started waiting")
				}
				held := fmt.Sprintf("another memif-agent holds %s (pid %d on ", lockPath, first.cmd.Process.Pid)
				if second.exitErr == nil || !strings.Contains(second.log.String(), held) {
					t.Errorf("the second agent exited with %v; want an error saying %q", second.exitErr, held)
				}
				first.waitReady(t)
				return
			}
			if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			<-first.exited
			second.waitReady(t)
		})
	}
}

// socketsAndCheckpoint lists the process's open sockets and checkpoint
// files (the snapshot and its journal, not the lock), from /proc.
func socketsAndCheckpoint(t *testing.T, pid int, checkpoint string) []string {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, entry := range entries {
		target, err := os.Readlink(filepath.Join(fdDir, entry.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if strings.HasPrefix(target, "socket:") || (strings.HasPrefix(target, checkpoint) && !strings.HasSuffix(target, ".lock")) {
			open = append(open, target)
		}
	}
	return open
}
