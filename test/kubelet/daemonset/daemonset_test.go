package daemonset_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	docker "github.com/fsouza/go-dockerclient"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

func TestMain(m *testing.M) { os.Exit(kubelettest.Main(m)) }

const podResourcesSocket = kubelettest.KubeletRoot + "/pod-resources/kubelet.sock"

// manifests are the DaemonSet and its ConfigMap as k8s/memif-agent.yaml
// has them (the chart's defaults, rendered by scripts/chart.sh).
type manifests struct {
	root      string
	daemonSet appsv1.DaemonSet
	configMap corev1.ConfigMap
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	m := manifests{}
	var err error
	if m.root, err = filepath.Abs("../../.."); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.root, "k8s", "memif-agent.yaml")
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]any{"DaemonSet": &m.daemonSet, "ConfigMap": &m.configMap}
	for _, document := range regexp.MustCompile(`(?m)^---$`).Split(string(content), -1) {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(document), &meta); err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
		target, wanted := targets[meta.Kind]
		if !wanted {
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(document), target); err != nil {
			t.Fatalf("decode the %s of %s: %v", meta.Kind, path, err)
		}
		delete(targets, meta.Kind)
	}
	if len(targets) > 0 {
		t.Fatalf("%s has no %v", path, targets)
	}
	return m
}

// buildImage runs make image's script against daemon, which then holds the
// image the DaemonSet names.
func buildImage(t *testing.T, m manifests, daemon *dockerd.Daemon, image string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(m.root, "scripts", "image.sh"))
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+daemon.Endpoint(), "IMAGE="+image, "OUT_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
}

// hostPaths maps the manifest's host paths to where this test keeps them:
// kubelet's directory is the private tmpfs, /run is the private engine's
// directory (it holds docker.sock), the rest goes under a temporary root.
type hostPaths struct {
	kubeletRoot string
	run         string
	tempRoot    string
}

func (h hostPaths) resolve(t *testing.T, path string) string {
	t.Helper()
	var resolved string
	switch {
	case path == "/run":
		resolved = h.run
	case strings.HasPrefix(path, h.kubeletRoot+"/"):
		resolved = path
	default:
		resolved = filepath.Join(h.tempRoot, path)
	}
	if err := os.MkdirAll(resolved, 0o755); err != nil {
		t.Fatalf("create host path %s: %v", resolved, err)
	}
	return resolved
}

// writeConfig writes the ConfigMap's files to a directory, with the HTTP
// endpoint moved to httpAddr so the test does not collide with an agent
// already on the default port.
func writeConfig(t *testing.T, cm corev1.ConfigMap, httpAddr string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range cm.Data {
		if name == "http.conf" {
			content = "endpoint: " + httpAddr + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// containerOptions is the DaemonSet's pod as Docker runs it: host network,
// the container's security context, resources, args, envs and volumes (an
// emptyDir is a temporary directory of the test's).
func containerOptions(t *testing.T, ds appsv1.DaemonSet, paths hostPaths, configDir string) docker.CreateContainerOptions {
	t.Helper()
	spec := ds.Spec.Template.Spec
	c := spec.Containers[0]
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	var binds []string
	for _, mount := range c.VolumeMounts {
		volume := volumes[mount.Name]
		source := configDir
		switch {
		case volume.HostPath != nil:
			source = paths.resolve(t, volume.HostPath.Path)
		case volume.EmptyDir != nil:
			source = t.TempDir()
		}
		bind := source + ":" + mount.MountPath
		if mount.ReadOnly {
			bind += ":ro"
		}
		binds = append(binds, bind)
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	security := c.SecurityContext
	host := &docker.HostConfig{
		Binds:          binds,
		CapDrop:        capabilityNames(security.Capabilities.Drop),
		CapAdd:         capabilityNames(security.Capabilities.Add),
		ReadonlyRootfs: security.ReadOnlyRootFilesystem != nil && *security.ReadOnlyRootFilesystem,
		Privileged:     security.Privileged != nil && *security.Privileged,
		Memory:         c.Resources.Limits.Memory().Value(),
		NanoCPUs:       c.Resources.Limits.Cpu().MilliValue() * 1_000_000,
	}
	if spec.HostNetwork {
		host.NetworkMode = "host"
	}
	if security.AllowPrivilegeEscalation != nil && !*security.AllowPrivilegeEscalation {
		host.SecurityOpt = append(host.SecurityOpt, "no-new-privileges")
	}
	user := ""
	if security.RunAsUser != nil {
		user = fmt.Sprint(*security.RunAsUser)
		if security.RunAsGroup != nil {
			user += fmt.Sprintf(":%d", *security.RunAsGroup)
		}
	}
	return docker.CreateContainerOptions{
		Name:       "memif-agent-daemonset-test",
		Config:     &docker.Config{Image: c.Image, Cmd: c.Args, Env: env, User: user},
		HostConfig: host,
	}
}

func capabilityNames(capabilities []corev1.Capability) []string {
	names := make([]string, 0, len(capabilities))
	for _, c := range capabilities {
		names = append(names, string(c))
	}
	return names
}

// probe runs an exec probe in the container the way kubelet does, each
// run bounded by the probe's timeoutSeconds, retrying within the probe's
// own failure budget.
func probe(ctx context.Context, client *docker.Client, id string, p *corev1.Probe) error {
	if p.Exec == nil {
		return fmt.Errorf("probe %+v is not an exec probe", p)
	}
	attempts := max(p.FailureThreshold, 3)
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	var last string
	for range attempts {
		out, code, err := execWithin(ctx, client, id, time.Duration(max(p.TimeoutSeconds, 1))*time.Second, p.Exec.Command)
		switch {
		case err != nil:
			last = err.Error()
		case code == 0:
			return nil
		default:
			last = fmt.Sprintf("exit %d: %s", code, out)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(period):
		}
	}
	return fmt.Errorf("%q failed %d times, last: %s", p.Exec.Command, attempts, last)
}

// execWithin runs cmd in the container and returns its output and exit
// code, or an error when it did not finish within timeout.
func execWithin(ctx context.Context, client *docker.Client, id string, timeout time.Duration, cmd []string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	created, err := client.CreateExec(docker.CreateExecOptions{Container: id, Cmd: cmd, AttachStdout: true, AttachStderr: true, Context: ctx})
	if err != nil {
		return "", 0, fmt.Errorf("exec %q: %w", cmd, err)
	}
	var out bytes.Buffer
	if err := client.StartExec(created.ID, docker.StartExecOptions{OutputStream: &out, ErrorStream: &out, Context: ctx}); err != nil {
		return "", 0, fmt.Errorf("exec %q: %w", cmd, err)
	}
	inspected, err := client.InspectExec(created.ID)
	if err != nil {
		return "", 0, fmt.Errorf("inspect exec %q: %w", cmd, err)
	}
	return out.String(), inspected.ExitCode, nil
}

// execInTimeout bounds a command a test runs in the container.
const execInTimeout = time.Minute

func execIn(t *testing.T, client *docker.Client, id string, cmd ...string) (string, int) {
	t.Helper()
	out, code, err := execWithin(context.Background(), client, id, execInTimeout, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return out, code
}

func TestDaemonSetPodRunsTheAgent(t *testing.T) {
	m := loadManifests(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	daemon := dockerd.Start(t)
	client := daemon.Client(t)
	container := m.daemonSet.Spec.Template.Spec.Containers[0]
	buildImage(t, m, daemon, container.Image)

	if err := os.MkdirAll(filepath.Dir(podResourcesSocket), 0o755); err != nil {
		t.Fatal(err)
	}
	kubelet, err := kubelettest.Start(ctx, podResourcesSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := kubelet.Stop(); err != nil {
			t.Error(err)
		}
	}()

	port := loopback.FreePort(t)
	configDir := writeConfig(t, m.configMap, net.JoinHostPort("127.0.0.1", port))
	paths := hostPaths{kubeletRoot: kubelettest.KubeletRoot, run: daemon.Dir(), tempRoot: t.TempDir()}
	opts := containerOptions(t, m.daemonSet, paths, configDir)
	created, err := client.CreateContainer(opts)
	if err != nil {
		t.Fatalf("create the agent container: %v", err)
	}
	defer func() { _ = client.RemoveContainer(docker.RemoveContainerOptions{ID: created.ID, Force: true}) }()
	if err := client.StartContainer(created.ID, nil); err != nil {
		t.Fatalf("start the agent container: %v", err)
	}
	logs := func() string {
		var out bytes.Buffer
		_ = client.Logs(docker.LogsOptions{Container: created.ID, Stdout: true, Stderr: true, OutputStream: &out, ErrorStream: &out, Tail: "20"})
		return out.String()
	}

	// Until the startup probe passes, kubelet runs no other probe.
	if err := probe(ctx, client, created.ID, container.StartupProbe); err != nil {
		t.Fatalf("startup probe: %v; agent log:\n%s", err, logs())
	}
	probes := []struct {
		name  string
		probe *corev1.Probe
	}{
		{"liveness", container.LivenessProbe},
		{"readiness", container.ReadinessProbe},
	}
	for _, tc := range probes {
		t.Run("probe/"+tc.name, func(t *testing.T) {
			if err := probe(ctx, client, created.ID, tc.probe); err != nil {
				t.Fatalf("%v; agent log:\n%s", err, logs())
			}
		})
	}

	t.Run("registers with kubelet", func(t *testing.T) {
		dmConf, err := dmconfig.Parse([]byte(m.configMap.Data["devicemanager.conf"]))
		if err != nil {
			t.Fatal(err)
		}
		waitCtx, cancelWait := context.WithTimeout(ctx, time.Minute)
		defer cancelWait()
		if err := kubelet.WaitForCapacity(waitCtx, dmConf.ResourceName, int64(dmConf.DeviceCount)); err != nil {
			t.Fatalf("%v; agent log:\n%s", err, logs())
		}
	})

	t.Run("memifctl in the container reaches the node API", func(t *testing.T) {
		out, code := execIn(t, client, created.ID, "memifctl", "list")
		if code != 0 || !strings.Contains(out, "No memif allocations") {
			t.Fatalf("memifctl list exited %d: %s", code, out)
		}
	})

	t.Run("stops cleanly within the grace period", func(t *testing.T) {
		grace := uint(*m.daemonSet.Spec.Template.Spec.TerminationGracePeriodSeconds)
		if err := client.StopContainer(created.ID, grace); err != nil {
			t.Fatalf("stop: %v", err)
		}
		inspected, err := client.InspectContainerWithOptions(docker.InspectContainerOptions{ID: created.ID})
		if err != nil {
			t.Fatal(err)
		}
		if inspected.State.ExitCode != 0 {
			t.Fatalf("agent exited with %d after SIGTERM; log:\n%s", inspected.State.ExitCode, logs())
		}
	})
}
