package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/contivpp/memif-agent/internal/agentwiring"
	"github.com/contivpp/memif-agent/test/kit/connflood"
)

// The flood of TestProbesAndTheHTTPPortAnswerDuringAFlood.
const (
	// floodConnections is how many connections the user nobody holds.
	floodConnections = 2000
	// rounds is how often each probe and each request to the HTTP port
	// is asked during the flood, one round every roundGap: long enough
	// for the agent to cut off the flood's idle connections
	// (httpReadHeaderTimeout) and the flood to reopen them a few times.
	rounds   = 8
	roundGap = 2 * time.Second
	// httpTimeout bounds a request to the HTTP port: Prometheus's default
	// scrape_timeout.
	httpTimeout = 10 * time.Second
)

// TestProbesAndTheHTTPPortAnswerDuringAFlood: the user nobody holds 2,000
// connections to the agent's loopback HTTP port and reopens each one the
// agent closes. The liveness and readiness probes of the DaemonSet
// (k8s/memif-agent.yaml), asked as kubelet asks them, pass every time
// meanwhile; so do a readiness check and a scrape on the HTTP port itself,
// within Prometheus's scrape timeout; and the agent's descriptors stay
// bounded. With probes on the HTTP port, each would wait behind the
// flood's connections in the kernel's accept queue and time out, and
// kubelet would restart the agent; with the HTTP port's connections
// limited by making new ones wait (netutil.LimitListener), its own
// requests did.
func TestProbesAndTheHTTPPortAnswerDuringAFlood(t *testing.T) {
	container := daemonSetContainer(t)
	probes := []struct {
		name  string
		probe *corev1.Probe
	}{
		{"liveness", container.LivenessProbe},
		{"readiness", container.ReadinessProbe},
	}
	requests := []string{"/readiness", "/metrics"}
	configDir := agentConfigDir(t, nil)
	agent := startAgent(t, configDir)
	agent.waitReady(t)
	prober := kubeletProber{
		binary:      productionBinary(t),
		httpPort:    agent.httpPort,
		probeSocket: filepath.Join(filepath.Dir(configDir), "api", "probe.sock"),
	}
	fdsBefore := openDescriptors(t, agent.cmd.Process.Pid)

	flood := connflood.Start(t, connflood.Spec{Network: "tcp", Address: net.JoinHostPort("127.0.0.1", agent.httpPort), Connections: floodConnections})
	passed, slowest := map[string]int{}, map[string]time.Duration{}
	for round := range rounds {
		if round > 0 {
			time.Sleep(roundGap)
		}
		for _, p := range probes {
			asked := time.Now()
			err := prober.ask(p.probe)
			slowest[p.name] = max(slowest[p.name], time.Since(asked))
			if err != nil {
				t.Errorf("round %d: %s probe failed: %v", round+1, p.name, err)
				continue
			}
			passed[p.name]++
		}
		for _, path := range requests {
			ctx, cancel := context.WithTimeout(t.Context(), httpTimeout)
			asked := time.Now()
			err := prober.httpGet(ctx, &corev1.HTTPGetAction{Host: "127.0.0.1", Path: path})
			slowest[path] = max(slowest[path], time.Since(asked))
			cancel()
			if err != nil {
				t.Errorf("round %d: %v", round+1, err)
				continue
			}
			passed[path]++
		}
	}
	fdsDuring := openDescriptors(t, agent.cmd.Process.Pid)
	reopened := flood.Stop(t)
	for _, p := range probes {
		t.Logf("%s probe: passed %d of %d during the flood; the slowest took %v (reported, not asserted)", p.name, passed[p.name], rounds, slowest[p.name].Round(time.Millisecond))
	}
	for _, path := range requests {
		t.Logf("GET %s on the HTTP port: answered %d of %d during the flood; the slowest took %v (reported, not asserted)", path, passed[path], rounds, slowest[path].Round(time.Millisecond))
	}
	t.Logf("the flood opened %d connections in all; the agent's descriptors: %d before, %d during", reopened, fdsBefore, fdsDuring)
	// The HTTP server holds at most agentwiring.MaxHTTPConnections of them; a few more
	// are the probes' and kubelet's.
	if limit := fdsBefore + agentwiring.MaxHTTPConnections + 8; fdsDuring > limit {
		t.Errorf("the agent held %d descriptors during the flood, %d before; want at most %d", fdsDuring, fdsBefore, limit)
	}
}

// daemonSetContainer is the agent's container of the DaemonSet in
// k8s/memif-agent.yaml, the chart's default render.
func daemonSetContainer(t *testing.T) corev1.Container {
	t.Helper()
	const manifests = "k8s/memif-agent.yaml"
	content, err := os.ReadFile(filepath.Join("..", "..", manifests))
	if err != nil {
		t.Fatal(err)
	}
	for _, document := range strings.Split(string(content), "\n---\n") {
		var daemonSet appsv1.DaemonSet
		if err := yaml.Unmarshal([]byte(document), &daemonSet); err != nil {
			t.Fatalf("%s: %v", manifests, err)
		}
		if daemonSet.Kind != "DaemonSet" {
			continue
		}
		for _, container := range daemonSet.Spec.Template.Spec.Containers {
			if container.Name == "memif-agent" {
				return container
			}
		}
	}
	t.Fatalf("%s has no DaemonSet with a memif-agent container", manifests)
	return corev1.Container{}
}

// kubeletProber asks a probe of the DaemonSet the way kubelet does, of an
// agent whose files are the test's: an exec probe runs its command as
// root (memif-agent being binary, and its socket the agent's, which the
// container would see at the default path), an httpGet probe
// goes to the agent's HTTP port. Either must answer within the probe's
// timeoutSeconds; an httpGet probe passes on a status below 400.
type kubeletProber struct {
	binary      string
	httpPort    string
	probeSocket string
}

func (k kubeletProber) ask(probe *corev1.Probe) error {
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	switch {
	case probe.Exec != nil:
		return k.exec(ctx, probe.Exec.Command)
	case probe.HTTPGet != nil:
		return k.httpGet(ctx, probe.HTTPGet)
	}
	return fmt.Errorf("probe %+v is neither exec nor httpGet", probe)
}

func (k kubeletProber) exec(ctx context.Context, command []string) error {
	if len(command) < 2 || command[0] != "memif-agent" || command[1] != "probe" {
		return fmt.Errorf("exec probe %q does not run memif-agent probe", command)
	}
	args := slices.Clone(command[1:])
	if !slices.Contains(args, "-socket") {
		args = slices.Insert(args, 1, "-socket", k.probeSocket)
	}
	out, err := exec.CommandContext(ctx, k.binary, args...).CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("%q: no answer in time: %w", command, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("%q: %w: %s", command, err, out)
	}
	return nil
}

func (k kubeletProber) httpGet(ctx context.Context, get *corev1.HTTPGetAction) error {
	url := "http://" + net.JoinHostPort(get.Host, k.httpPort) + get.Path
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	client := http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	response, err := client.Do(request)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer response.Body.Close()
	if response.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("GET %s: %s", url, response.Status)
	}
	return nil
}

// productionBinary builds memif-agent as it ships, without the race
// detector, once per test binary, beside agentBinary. kubelet runs that
// one; the race detector's start-up alone takes about a second here,
// a third of the probes' timeout.
func productionBinary(t *testing.T) string {
	t.Helper()
	buildProduction.Do(func() {
		path := filepath.Join(filepath.Dir(agentBinary), "memif-agent-production")
		out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput()
		buildProduction.path, buildProduction.err = path, err
		if err != nil {
			buildProduction.err = fmt.Errorf("build memif-agent: %w: %s", err, out)
		}
	})
	if buildProduction.err != nil {
		t.Fatal(buildProduction.err)
	}
	return buildProduction.path
}

var buildProduction struct {
	sync.Once
	path string
	err  error
}

func openDescriptors(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
