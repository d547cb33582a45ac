package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/contivpp/memif-agent/internal/agentwiring"
	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/otheruser"
)

// The attack of TestProbesAnswerWhileALocalUserFillsTheHTTPPort.
const (
	// attackerEnv, set, makes the test binary the attacker (runAttacker).
	attackerEnv = "MEMIF_AGENT_TEST_ATTACKER"
	// attackConnections is how many connections the attacker holds.
	attackConnections = 2000
	// attackLimit bounds the attacker: it stops after this long, or once
	// it has opened attackConnections*attackReopens connections.
	attackLimit   = 3 * time.Minute
	attackReopens = 50
	// probeRounds is how often each probe is asked during the attack, one
	// round every probeRoundGap: long enough for the agent to cut off the
	// attacker's idle connections (httpReadHeaderTimeout) and the attacker
	// to reopen them a few times.
	probeRounds   = 8
	probeRoundGap = 2 * time.Second
	// nobody is the unprivileged user the attacker runs as.
	nobody = 65534
)

// TestProbesAnswerWhileALocalUserFillsTheHTTPPort: the user nobody holds
// 2,000 connections to the agent's loopback HTTP port and reopens each one
// the agent closes. The liveness and readiness probes of the DaemonSet
// (k8s/memif-agent.yaml), asked as kubelet asks them, pass every time meanwhile, and
// the agent's descriptors stay bounded. With probes on the HTTP port, each
// would wait behind the attacker's connections in the kernel's accept
// queue and time out, and kubelet would restart the agent.
func TestProbesAnswerWhileALocalUserFillsTheHTTPPort(t *testing.T) {
	needs.Root(t, "running the attacker as the unprivileged user nobody")
	container := daemonSetContainer(t)
	probes := []struct {
		name  string
		probe *corev1.Probe
	}{
		{"liveness", container.LivenessProbe},
		{"readiness", container.ReadinessProbe},
	}
	configDir := agentConfigDir(t, nil)
	agent := startAgent(t, configDir)
	agent.waitReady(t)
	prober := kubeletProber{
		binary:      productionBinary(t),
		httpPort:    agent.httpPort,
		probeSocket: filepath.Join(filepath.Dir(configDir), "api", "probe.sock"),
	}
	fdsBefore := openDescriptors(t, agent.cmd.Process.Pid)

	attacker := startAttacker(t, net.JoinHostPort("127.0.0.1", agent.httpPort))
	t.Logf("the user nobody holds %s connections to the HTTP port", attacker.holding(t))
	passed, slowest := map[string]int{}, map[string]time.Duration{}
	for round := range probeRounds {
		if round > 0 {
			time.Sleep(probeRoundGap)
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
	}
	fdsDuring := openDescriptors(t, agent.cmd.Process.Pid)
	reopened := attacker.stop(t)
	for _, p := range probes {
		t.Logf("%s: passed %d of %d while the attacker held the HTTP port; the slowest took %v (reported, not asserted)", p.name, passed[p.name], probeRounds, slowest[p.name].Round(time.Millisecond))
	}
	t.Logf("the attacker opened %s connections in all; the agent's descriptors: %d before, %d during", reopened, fdsBefore, fdsDuring)
	// The HTTP server holds at most agentwiring.MaxHTTPConnections of them; a few more
	// are the probes' and kubelet's.
	if limit := fdsBefore + agentwiring.MaxHTTPConnections + 8; fdsDuring > limit {
		t.Errorf("the agent held %d descriptors during the attack, %d before; want at most %d", fdsDuring, fdsBefore, limit)
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

// attacker is the test binary running runAttacker as the user nobody.
type attacker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

func startAttacker(t *testing.T, addr string) *attacker {
	t.Helper()
	binary := otheruser.TestBinary(t, "attacker")
	a := &attacker{cmd: exec.Command(binary)}
	a.cmd.Env = []string{attackerEnv + "=" + addr}
	a.cmd.Stderr = os.Stderr
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var err error
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.stdout = bufio.NewReader(stdout)
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start the attacker as nobody: %v", err)
	}
	t.Cleanup(func() {
		a.stdin.Close()
		a.cmd.Process.Kill()
		a.cmd.Wait()
	})
	return a
}

// holding waits until the attacker holds its connections and returns how
// many it opened.
func (a *attacker) holding(t *testing.T) string {
	t.Helper()
	return a.line(t)
}

// stop ends the attack and returns how many connections it opened in all.
func (a *attacker) stop(t *testing.T) string {
	t.Helper()
	a.stdin.Close()
	return a.line(t)
}

func (a *attacker) line(t *testing.T) string {
	t.Helper()
	text, err := a.stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("the attacker printed %q: %v", text, err)
	}
	return strings.TrimSpace(text)
}

// runAttacker is the test binary run by startAttacker: it holds
// attackConnections idle connections to addr, each reopened as soon as the
// server closes it, prints how many it opened once all are open, and when
// its stdin closes (or attackLimit passes) prints how many it opened in
// all and exits.
func runAttacker(addr string) int {
	ctx, cancel := context.WithTimeout(context.Background(), attackLimit)
	defer cancel()
	var opened atomic.Int64
	var filled sync.WaitGroup
	var holders sync.WaitGroup
	filled.Add(attackConnections)
	for range attackConnections {
		holders.Go(func() { holdReopening(ctx, addr, &opened, &filled) })
	}
	filled.Wait()
	fmt.Println(opened.Load())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	holders.Wait()
	fmt.Println(opened.Load())
	return 0
}

// holdReopening keeps one connection to addr open until ctx ends: it
// sends nothing, and reopens the connection whenever the server closes it.
// filled is marked done once the first connection is open.
func holdReopening(ctx context.Context, addr string, opened *atomic.Int64, filled *sync.WaitGroup) {
	dialer := net.Dialer{Timeout: time.Second}
	first := true
	for ctx.Err() == nil && opened.Load() < attackConnections*attackReopens {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		opened.Add(1)
		if first {
			filled.Done()
			first = false
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		_, err = conn.Read(make([]byte, 1))
		stop()
		conn.Close()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) {
			fmt.Fprintln(os.Stderr, "attacker:", err)
		}
	}
	if first {
		filled.Done()
	}
}
