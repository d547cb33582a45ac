package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/contivpp/memif-agent/plugins/health/probesocket"
	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/contivpp/memif-agent/test/kit/program"
)

// agentStopTimeout bounds the agent's shutdown after SIGTERM.
const agentStopTimeout = 30 * time.Second

// agent is the real memif-agent binary, run with a demo config.
type agent struct {
	binDir      string
	configDir   string
	socketRoot  string
	apiSocket   string
	probeSocket string
	httpAddr    string
	logPath     string
	program     *program.Program
}

// agentConfig is where the agent keeps its state: everything under dir,
// except kubelet's directories, which are the real paths in the private
// mount namespace.
type agentConfig struct {
	dir                string
	deviceCount        int
	podResourcesSocket string
	dockerHost         string
	// vppAPISocket is the API socket of the VPP the agent programs.
	vppAPISocket string
}

func newAgent(binDir string, cfg agentConfig) (*agent, error) {
	a := &agent{
		binDir:      binDir,
		configDir:   filepath.Join(cfg.dir, "config"),
		socketRoot:  filepath.Join(cfg.dir, "memif"),
		apiSocket:   filepath.Join(cfg.dir, "api", "api.sock"),
		probeSocket: filepath.Join(cfg.dir, "api", "probe.sock"),
		logPath:     filepath.Join(cfg.dir, "memif-agent.log"),
	}
	// Free ports, not the defaults: an agent may already run here.
	ports, err := loopback.Ports(2)
	if err != nil {
		return nil, err
	}
	a.httpAddr = net.JoinHostPort("127.0.0.1", ports[0])
	files := map[string]string{
		"http.conf":    "endpoint: " + a.httpAddr + "\n",
		"metrics.conf": "address: 127.0.0.1\nport: " + ports[1] + "\n",
		"devicemanager.conf": fmt.Sprintf("device-count: %d\nsocket-root: %s\ncheckpoint-path: %s\ndevice-info-dir: %s\n",
			cfg.deviceCount, a.socketRoot, filepath.Join(cfg.dir, "checkpoint", "checkpoint.json"), filepath.Join(cfg.dir, "devinfo")),
		"nodeapi.conf": "socket-path: " + a.apiSocket + "\n",
		"health.conf":  "probe-socket: " + a.probeSocket + "\n",
		// A short reconcile period: the demo deletes a pod's containers
		// before kubelet forgets it, and the agent sees the pod gone at the
		// next comparison of Docker and pod-resources.
		"podmanager.conf": fmt.Sprintf("docker-endpoint: %s\npod-resources-socket: %s\nreconcile-period: 1s\n",
			cfg.dockerHost, cfg.podResourcesSocket),
		// The agent programs the demo's VPP, the pods' memifs in one
		// bridge domain.
		"vswitch.conf":     "vpp-api-socket: " + cfg.vppAPISocket + "\n",
		"memifwiring.conf": "bridge-domain: demo-pods\n",
	}
	if err := os.MkdirAll(a.configDir, 0o700); err != nil {
		return nil, fmt.Errorf("create agent config dir: %w", err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(a.configDir, name), []byte(content), 0o600); err != nil {
			return nil, fmt.Errorf("write agent config %s: %w", name, err)
		}
	}
	return a, nil
}

// start runs the agent and waits until its readiness probe passes.
func (a *agent) start(ctx context.Context, dockerHost string) error {
	cmd := exec.Command(filepath.Join(a.binDir, "memif-agent"), "--config-dir="+a.configDir)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+dockerHost)
	p, err := program.Start("memif-agent", a.logPath, cmd)
	if err != nil {
		return fmt.Errorf("%w (build it with make build)", err)
	}
	a.program = p
	return a.waitReady(ctx)
}

// waitReady asks the readiness probe on the probe socket, as kubelet's
// exec probe does, until it passes.
func (a *agent) waitReady(ctx context.Context) error {
	for {
		askCtx, cancel := context.WithTimeout(ctx, time.Second)
		answer, err := probesocket.Ask(askCtx, a.probeSocket, probesocket.ReadinessPath)
		cancel()
		if err == nil && answer.Passed() {
			return nil
		}
		select {
		case <-a.program.Exited():
			return fmt.Errorf("at start: %w", a.program.Running())
		case <-ctx.Done():
			return fmt.Errorf("memif-agent not ready (probe socket %s): %w; see %s", a.probeSocket, context.Cause(ctx), a.logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits; a kill after agentStopTimeout is an error.
func (a *agent) stop() error {
	killed, err := a.program.Stop(agentStopTimeout)
	if killed {
		return fmt.Errorf("memif-agent ignored SIGTERM for %s and was killed", agentStopTimeout)
	}
	return err
}

// memifctlAllocation is one allocation in `memifctl -o json` output.
type memifctlAllocation struct {
	AllocationID    string   `json:"allocationId"`
	DeviceIDs       []string `json:"deviceIds"`
	PodNamespace    string   `json:"podNamespace"`
	PodName         string   `json:"podName"`
	ContainerName   string   `json:"containerName"`
	HostSocket      string   `json:"hostSocket"`
	HostDir         string   `json:"hostDir"`
	ContainerSocket string   `json:"containerSocket"`
	Secret          string   `json:"secret"`
}

// memifctl runs the real memifctl against the agent's API and decodes its
// JSON output.
func (a *agent) memifctl(ctx context.Context, args ...string) ([]memifctlAllocation, error) {
	full := append([]string{"-socket", a.apiSocket, "-o", "json"}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(a.binDir, "memifctl"), full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("memifctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var allocations []memifctlAllocation
	if err := json.Unmarshal(out, &allocations); err != nil {
		return nil, fmt.Errorf("decode memifctl %s output %q: %w", strings.Join(args, " "), out, err)
	}
	return allocations, nil
}

// waitPodMemif polls `memifctl get` until the agent has bound an allocation
// to the pod.
func (a *agent) waitPodMemif(ctx context.Context, namespace, name string) (memifctlAllocation, error) {
	var lastErr error
	for {
		allocations, err := a.memifctl(ctx, "--show-secrets", "get", namespace+"/"+name)
		if err == nil && len(allocations) > 0 {
			return allocations[0], nil
		}
		if err == nil {
			err = errors.New("no allocation listed")
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return memifctlAllocation{}, fmt.Errorf("agent never reported a memif for pod %s/%s: %w (last: %v)", namespace, name, context.Cause(ctx), lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
