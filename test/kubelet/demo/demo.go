package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"

	"github.com/contivpp/memif-agent/test/kit/program"
	"github.com/contivpp/memif-agent/test/kit/vppstate"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	resourceName = "contivpp.io/memif"
	// deviceCount is what the demo agent advertises: more than the pods
	// need, so capacity shows that only the allocated ones are taken.
	deviceCount = 8
	// podResourcesSocket is kubelet's pod-resources socket, inside the
	// private mount namespace's tmpfs.
	podResourcesSocket = kubelettest.KubeletRoot + "/pod-resources/kubelet.sock"
	// containerName is the one app container of each demo pod.
	containerName = "c0"
)

// Options configure Run.
type Options struct {
	// BinDir holds the memif-agent and memifctl binaries.
	BinDir string
	// RepoRoot is the repository root (scripts/dockerd.sh).
	RepoRoot string
	// Pods is how many pods request a memif; default 3.
	Pods int
	// Window is how long packets are counted for the rate; default 1s.
	Window time.Duration
	// StepTimeout bounds each waiting step; default 2 minutes.
	StepTimeout time.Duration
	// Out receives one line per step.
	Out io.Writer
}

func (o *Options) applyDefaults() {
	if o.Pods == 0 {
		o.Pods = 3
	}
	if o.Window == 0 {
		o.Window = time.Second
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = 2 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
}

// Result is what the demo saw.
type Result struct {
	// Pods is every pod's memif once all links were up.
	Pods []PodResult
	// Deleted is the pod deleted in step 4; DirReleased and DevicesReleased
	// say whether the agent removed its socket directory and freed its
	// devices (in its own list and in kubelet's).
	Deleted         string
	DirReleased     bool
	DevicesReleased bool
	// Remaining is the other pods' memifs after the deletion.
	Remaining []PodResult
	// Leftovers names what teardown found still running or present.
	Leftovers []string
}

// session is one run's state, torn down in reverse order of creation.
type session struct {
	opts     Options
	report   reporter
	workDir  string
	kubelet  *kubelettest.Kubelet
	engine   *engine
	vswitch  *vswitch
	agent    *agent
	pods     []*demoPod
	teardown []func() error
}

// demoPod is one pod with both ends of its memif.
type demoPod struct {
	docker      *dockerPod
	memif       memifctlAllocation
	vswitch     *vppstate.Memif
	linkUpAfter time.Duration
}

func (p *demoPod) name() string { return p.docker.pod.Name }

// Run runs the demo flow (see the package doc) and always tears down what
// it started, also when ctx ends or a step fails.
func Run(ctx context.Context, opts Options) (result Result, err error) {
	opts.applyDefaults()
	s := &session{opts: opts, report: reporter{out: opts.Out}}
	defer func() {
		result.Leftovers = s.tearDown()
	}()
	steps := []func(context.Context, *Result) error{
		s.startKubelet, s.startEngine, s.startVswitch, s.startAgent, s.admitPods, s.wirePods, s.measure, s.deleteFirstPod,
	}
	for _, step := range steps {
		err := ctx.Err()
		if err == nil {
			err = step(ctx, &result)
		}
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// An interrupted step may fail with an error of its own.
			err = fmt.Errorf("%w: %v", ctx.Err(), err)
		}
		if err != nil && ctx.Err() != nil {
			s.report.step("interrupt", "stopping everything the demo started")
			return result, err
		}
		if err != nil {
			s.report.step("FAILED", "%v", err)
			s.reportAgentLog()
			return result, err
		}
	}
	return result, nil
}

// reportAgentLog shows the end of the agent's log, which teardown removes.
func (s *session) reportAgentLog() {
	if s.agent == nil {
		return
	}
	for _, line := range strings.Split(program.Tail(s.agent.logPath, 10), "\n") {
		s.report.step("agent log", "%s", line)
	}
}

func (s *session) onTeardown(f func() error) { s.teardown = append(s.teardown, f) }

// withTimeout bounds a waiting step.
func (s *session) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.StepTimeout)
}

func (s *session) startKubelet(ctx context.Context, _ *Result) error {
	if os.Geteuid() != 0 {
		return errors.New("the demo runs dockerd, kubelet's device manager and DPDK: run it as root")
	}
	workDir, err := os.MkdirTemp("", "memif-demo-")
	if err != nil {
		return fmt.Errorf("create the demo's work directory: %w", err)
	}
	s.workDir = workDir
	s.onTeardown(func() error { return os.RemoveAll(workDir) })
	if err := os.MkdirAll(filepath.Dir(podResourcesSocket), 0o755); err != nil {
		return fmt.Errorf("create kubelet's pod-resources directory: %w", err)
	}
	// The kubelet outlives ctx: teardown stops it after the pods are gone.
	k, err := kubelettest.Start(context.WithoutCancel(ctx), podResourcesSocket)
	if err != nil {
		return err
	}
	s.kubelet = k
	s.onTeardown(k.Stop)
	s.report.step("kubelet", "real device manager listening at %s; pod-resources at %s", kubelettest.RegistrationSocket, podResourcesSocket)
	return nil
}

func (s *session) startEngine(ctx context.Context, _ *Result) error {
	e, err := startEngine(ctx, s.opts.RepoRoot, filepath.Join(s.workDir, "docker"))
	if err != nil {
		return err
	}
	s.engine = e
	s.onTeardown(e.stop)
	if err := importPodImage(e.client); err != nil {
		return err
	}
	s.report.step("docker", "private dockerd %s (pid %d) at %s, no bridge, no iptables; pod image %s imported", e.version(), e.pid, e.host, podImage)
	return nil
}

func (s *session) startVswitch(ctx context.Context, _ *Result) error {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	sw, err := startVswitch(ctx, vswitchDir(s.workDir))
	if err != nil {
		return fmt.Errorf("start VPP: %w", err)
	}
	s.vswitch = sw
	s.onTeardown(sw.stop)
	s.report.step("vswitch", "VPP %s at %s (memif plugin, no DPDK, no hugepages)", sw.version, sw.vpp.APISocket)
	return nil
}

func (s *session) startAgent(ctx context.Context, _ *Result) error {
	a, err := newAgent(s.opts.BinDir, agentConfig{
		dir: filepath.Join(s.workDir, "agent"), deviceCount: deviceCount,
		podResourcesSocket: podResourcesSocket, dockerHost: s.engine.host,
		vppAPISocket: s.vswitch.vpp.APISocket,
	})
	if err != nil {
		return err
	}
	s.agent = a
	s.onTeardown(a.stop)
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	started := time.Now()
	if err := a.start(ctx, s.engine.host); err != nil {
		return err
	}
	if err := s.kubelet.WaitForCapacity(ctx, resourceName, deviceCount); err != nil {
		return fmt.Errorf("memif-agent did not register with kubelet: %w; see %s", err, a.logPath)
	}
	s.report.step("agent", "memif-agent pid %d ready; kubelet sees %s: %d allocatable after %s (config %s)",
		a.program.Pid(), resourceName, deviceCount, time.Since(started).Round(time.Millisecond), a.configDir)
	return nil
}

func (s *session) admitPods(ctx context.Context, _ *Result) error {
	s.onTeardown(s.removePods)
	for i := range s.opts.Pods {
		pod := kubelettest.NewPod(fmt.Sprintf("memif-%d", i+1), resourceName, 1)
		options, err := s.kubelet.AdmitPod(ctx, pod)
		if err != nil {
			return err
		}
		opts := options[containerName]
		if opts == nil {
			return fmt.Errorf("kubelet returned no options for container %s of pod %s", containerName, pod.Name)
		}
		dp, err := createDockerPod(s.engine.client, pod, containerName, opts)
		if dp != nil {
			s.pods = append(s.pods, &demoPod{docker: dp})
		}
		if err != nil {
			return err
		}
		s.report.step("pod", "%s admitted; kubelet handed %s; container %s created in Docker (id %.12s)",
			pod.Name, describeOptions(opts.Envs, opts.Mounts, len(opts.Annotations)), containerName, dp.appID)
	}
	return nil
}

func (s *session) wirePods(ctx context.Context, _ *Result) error {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	for _, p := range s.pods {
		memif, err := s.agent.waitPodMemif(ctx, p.docker.pod.Namespace, p.name())
		if err != nil {
			return err
		}
		p.memif = memif
		p.vswitch, err = s.vswitch.state.WaitMemif(ctx, memif.HostSocket)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name(), err)
		}
		s.report.step("vswitch", "%s: memifctl get says socket %s, devices %v; VPP holds memif %s (%s), master on that socket with the pod's secret",
			p.name(), memif.HostSocket, memif.DeviceIDs, p.vswitch.Name, p.vswitch.Tag)
		if err := p.docker.startApp(s.engine.client); err != nil {
			return err
		}
		started := time.Now()
		if err := s.vswitch.state.WaitLinkUp(ctx, p.vswitch); err != nil {
			return fmt.Errorf("%s: %w; pod side output:\n%s", p.name(), err, p.docker.logs(s.engine.client))
		}
		p.linkUpAfter = time.Since(started)
		s.report.step("pod", "%s: DPDK memif client started in its container with its MEMIF_SOCKET and MEMIF_SECRET; link up after %s",
			p.name(), p.linkUpAfter.Round(time.Millisecond))
	}
	return nil
}

func (s *session) measure(ctx context.Context, result *Result) error {
	results, err := s.linkResults(ctx, s.pods)
	result.Pods = results
	if err != nil {
		return err
	}
	for _, line := range strings.Split(table(results), "\n") {
		s.report.step("traffic", "%s", line)
	}
	return nil
}

// linkResults waits for each pod's link and counts its packets.
func (s *session) linkResults(ctx context.Context, pods []*demoPod) ([]PodResult, error) {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	var results []PodResult
	for _, p := range pods {
		r := PodResult{Pod: p.name(), HostSocket: p.memif.HostSocket, LinkUpAfter: p.linkUpAfter}
		if err := s.vswitch.state.WaitLinkUp(ctx, p.vswitch); err != nil {
			return append(results, r), fmt.Errorf("%s: %w; pod side output:\n%s", p.name(), err, p.docker.logs(s.engine.client))
		}
		r.LinkUp = true
		// A window without packets is counted again, until the step's
		// deadline: on a loaded machine the pod side can miss a whole
		// window of CPU. A link that never carries packets fails the step.
		for r.PacketsPerSec == 0 {
			rate, received, err := s.vswitch.state.RxRate(ctx, p.vswitch, s.opts.Window)
			if err != nil {
				return append(results, r), fmt.Errorf("%s: no packets flowing (%d received in all): %w", p.name(), r.RxPackets, err)
			}
			r.PacketsPerSec, r.RxPackets = rate, received
		}
		results = append(results, r)
	}
	return results, nil
}

func (s *session) deleteFirstPod(ctx context.Context, result *Result) error {
	victim, rest := s.pods[0], s.pods[1:]
	result.Deleted = victim.name()
	started := time.Now()
	if err := victim.docker.remove(s.engine.client); err != nil {
		return err
	}
	s.kubelet.RemovePod(victim.docker.pod.UID)
	s.pods = rest
	s.report.step("delete", "%s: containers removed, kubelet forgot the pod", victim.name())

	waitCtx, cancel := s.withTimeout(ctx)
	defer cancel()
	if err := s.waitReleased(waitCtx, victim, result); err != nil {
		return err
	}
	s.report.step("release", "%s: agent removed %s and freed devices %v after %s (kubelet holds none for it)",
		victim.name(), victim.memif.HostDir, victim.memif.DeviceIDs, time.Since(started).Round(time.Millisecond))
	// The agent deletes the VPP side before the directory.
	memif, err := s.vswitch.state.FindMemif(waitCtx, victim.memif.HostSocket)
	if err != nil || memif != nil {
		return fmt.Errorf("%s: VPP still holds memif %v on %s after the release (%v)", victim.name(), memif, victim.memif.HostSocket, err)
	}
	if socketLeft, err := s.vswitch.state.HasSocket(waitCtx, victim.memif.HostSocket); err != nil || socketLeft {
		return fmt.Errorf("%s: VPP still lists socket %s after the release (%v)", victim.name(), victim.memif.HostSocket, err)
	}
	s.report.step("release", "%s: VPP memif %s and its socket gone", victim.name(), victim.vswitch.Name)

	remaining, err := s.linkResults(ctx, rest)
	result.Remaining = remaining
	if err != nil {
		return err
	}
	for _, r := range remaining {
		s.report.step("still up", "%s: link up, %.0f packets/s", r.Pod, r.PacketsPerSec)
	}
	return nil
}

// waitReleased waits until the agent has removed the pod's directory and
// lists no allocation of it, and kubelet holds no device for it.
func (s *session) waitReleased(ctx context.Context, p *demoPod, result *Result) error {
	for {
		_, statErr := os.Stat(p.memif.HostDir)
		result.DirReleased = errors.Is(statErr, os.ErrNotExist)
		allocations, err := s.agent.memifctl(ctx, "list")
		listed := slices.ContainsFunc(allocations, func(a memifctlAllocation) bool { return a.AllocationID == p.memif.AllocationID })
		held := s.kubelet.Devices(p.docker.pod.UID, containerName, resourceName)
		result.DevicesReleased = err == nil && !listed && len(held) == 0
		if result.DirReleased && result.DevicesReleased {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("agent did not release pod %s: directory gone %v, still listed %v (list error %v), kubelet still holds %v: %w",
				p.name(), result.DirReleased, listed, err, held, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removePods removes the pods' containers and has kubelet forget them.
func (s *session) removePods() error {
	var errs []error
	for _, p := range s.pods {
		errs = append(errs, p.docker.remove(s.engine.client))
		s.kubelet.RemovePod(p.docker.pod.UID)
	}
	return errors.Join(errs...)
}

// tearDown runs the teardown steps in reverse order and reports what is
// still around afterwards.
func (s *session) tearDown() []string {
	var errs []error
	for i := len(s.teardown) - 1; i >= 0; i-- {
		if err := s.teardown[i](); err != nil {
			errs = append(errs, err)
		}
	}
	leftovers := s.leftovers()
	for _, err := range errs {
		leftovers = append(leftovers, "teardown error: "+err.Error())
	}
	if len(leftovers) == 0 {
		s.report.step("teardown", "pods, memif-agent, VPP, dockerd and kubelet stopped; %s removed", s.workDir)
	} else {
		s.report.step("teardown", "left behind: %s", strings.Join(leftovers, "; "))
	}
	return leftovers
}

func (s *session) leftovers() []string {
	var left []string
	if s.agent != nil && s.agent.program != nil && alive(s.agent.program.Pid()) {
		left = append(left, fmt.Sprintf("memif-agent pid %d", s.agent.program.Pid()))
	}
	if s.engine != nil && alive(s.engine.pid) {
		left = append(left, fmt.Sprintf("dockerd pid %d", s.engine.pid))
	}
	if s.workDir != "" {
		if _, err := os.Stat(s.workDir); err == nil {
			left = append(left, "work directory "+s.workDir)
		}
		left = append(left, processesMentioning(s.workDir)...)
	}
	return left
}

// processesMentioning lists running processes whose command line names
// path: VPP, the agent, dockerd and its containerd all do.
func processesMentioning(path string) []string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []string
	for _, file := range cmdlines {
		content, err := os.ReadFile(file)
		if err != nil || !strings.Contains(string(content), path) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(file)))
		if pid == os.Getpid() || !alive(pid) {
			continue
		}
		command := strings.SplitN(string(content), "\x00", 2)[0]
		found = append(found, fmt.Sprintf("%s pid %d", filepath.Base(command), pid))
	}
	return found
}

// describeOptions says what kubelet handed the container, secret masked.
func describeOptions(envs []kubecontainer.EnvVar, mounts []kubecontainer.Mount, annotations int) string {
	var parts []string
	envs = slices.Clone(envs)
	slices.SortFunc(envs, func(a, b kubecontainer.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range envs {
		value := e.Value
		if strings.Contains(strings.ToUpper(e.Name), "SECRET") {
			value = "***"
		}
		parts = append(parts, e.Name+"="+value)
	}
	for _, m := range mounts {
		parts = append(parts, "mount "+m.HostPath+" -> "+m.ContainerPath)
	}
	parts = append(parts, fmt.Sprintf("%d annotations", annotations))
	return strings.Join(parts, ", ")
}
