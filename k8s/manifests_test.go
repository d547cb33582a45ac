package k8s_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ligato/cn-infra/agent"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/contivpp/memif-agent/internal/agentwiring"
	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/devicemanager"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/health"
	"github.com/contivpp/memif-agent/plugins/health/probesocket"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/nodeapi"
	"github.com/contivpp/memif-agent/plugins/podmanager"
)

// manifests are k8s/memif-agent.yaml, rendered from the chart with its
// defaults, and the example pod.
type manifests struct {
	*rendered
	examplePod corev1.Pod
}

// decodeStrict turns one YAML document into target the way the API server
// reads it: field names case-sensitive, unknown and duplicate fields refused.
// A kind that is not the expected one, or a second document, is refused too.
func decodeStrict(content []byte, wantKind string, target any) error {
	if documents := documentSeparator.Split(string(content), -1); len(documents) > 1 && strings.TrimSpace(strings.Join(documents[1:], "")) != "" {
		return fmt.Errorf("%d YAML documents in a %s file, want one", len(documents), wantKind)
	}
	jsonContent, err := yaml.YAMLToJSONStrict(content)
	if err != nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(jsonContent, &meta); err != nil {
		return fmt.Errorf("not a YAML object: %w", err)
	}
	if meta.Kind != wantKind {
		return fmt.Errorf("kind is %q, want %q", meta.Kind, wantKind)
	}
	strictErrors, err := kjson.UnmarshalStrict(jsonContent, target)
	if err != nil {
		return fmt.Errorf("decoding %s: %w", wantKind, err)
	}
	if len(strictErrors) > 0 {
		return fmt.Errorf("decoding %s strictly: %w", wantKind, errors.Join(strictErrors...))
	}
	return nil
}

var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{rendered: loadRendered(t, "memif-agent.yaml")}
	content, err := os.ReadFile("example-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := decodeStrict(content, "Pod", &m.examplePod); err != nil {
		t.Fatalf("example-pod.yaml: %v", err)
	}
	return m
}

func TestDecodeStrictRefusesTypos(t *testing.T) {
	cases := []struct {
		name    string
		kind    string
		content string
		target  any
		wantErr string
	}{
		{
			name:    "misspelt volume field",
			kind:    "DaemonSet",
			content: "apiVersion: apps/v1\nkind: DaemonSet\nspec:\n  template:\n    spec:\n      volumes:\n        - name: x\n          hostpath: {path: /x}\n",
			target:  &appsv1.DaemonSet{},
			wantErr: `unknown field "spec.template.spec.volumes[0].hostpath"`,
		},
		{
			name:    "resource limit that is not a quantity",
			kind:    "Pod",
			content: "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: c\n      resources:\n        limits: {contivpp.io/memif: one}\n",
			target:  &corev1.Pod{},
			wantErr: "quantities must match",
		},
		{
			name:    "duplicate field",
			kind:    "ConfigMap",
			content: "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\ndata: {c: d}\n",
			target:  &corev1.ConfigMap{},
			wantErr: `key "data" already set`,
		},
		{
			name:    "two documents",
			kind:    "ConfigMap",
			content: "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Pod\n",
			target:  &corev1.ConfigMap{},
			wantErr: "2 YAML documents",
		},
		{
			name:    "wrong kind",
			kind:    "DaemonSet",
			content: "apiVersion: apps/v1\nkind: Deployment\n",
			target:  &appsv1.DaemonSet{},
			wantErr: `kind is "Deployment"`,
		},
		{
			name:    "valid",
			kind:    "ConfigMap",
			content: "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n",
			target:  &corev1.ConfigMap{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := decodeStrict([]byte(tc.content), tc.kind, tc.target)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("decode failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("decode error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func agentContainer(t *testing.T, m *manifests) corev1.Container {
	t.Helper()
	containers := m.daemonSet.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		t.Fatalf("daemonset has %d containers, want 1", len(containers))
	}
	return containers[0]
}

// mountsOf maps each volume's name to its mount in the container.
func mountsOf(c corev1.Container) map[string]corev1.VolumeMount {
	mounts := map[string]corev1.VolumeMount{}
	for _, mount := range c.VolumeMounts {
		mounts[mount.Name] = mount
	}
	return mounts
}

func TestDaemonSetHostPaths(t *testing.T) {
	m := loadManifests(t)
	container := agentContainer(t, m)
	mounts := mountsOf(container)
	dmConfig := shippedConfig[dmconfig.Config](t, m, devicemanager.PluginName)
	hostPaths := map[string]string{}
	for _, volume := range m.daemonSet.Spec.Template.Spec.Volumes {
		if volume.HostPath == nil {
			continue
		}
		t.Run(volume.Name, func(t *testing.T) {
			var kind corev1.HostPathType
			if volume.HostPath.Type != nil {
				kind = *volume.HostPath.Type
			}
			if kind != corev1.HostPathDirectory && kind != corev1.HostPathDirectoryOrCreate {
				t.Errorf("host path %s has type %q, want Directory or DirectoryOrCreate: a socket bind-mounted as a file goes stale when its server restarts", volume.HostPath.Path, kind)
			}
			if _, mounted := mounts[volume.Name]; !mounted {
				t.Errorf("volume %s is not mounted in the agent container", volume.Name)
			}
		})
		hostPaths[volume.HostPath.Path] = mounts[volume.Name].MountPath
	}

	samePath := []struct {
		name string
		path string
	}{
		{"device-plugin directory", dmConfig.PluginDir},
		{"pod-resources directory", "/var/lib/kubelet/pod-resources"},
		{"memif socket root", dmConfig.SocketRoot},
		{"checkpoint directory", filepath.Dir(dmConfig.CheckpointPath)},
		{"node API socket directory", filepath.Dir(shippedConfig[nodeapi.Config](t, m, nodeapi.PluginName).SocketPath)},
		{"pod-resources socket directory", filepath.Dir(shippedConfig[podmanager.Config](t, m, podmanager.PluginName).PodResourcesSocket)},
	}
	for _, tc := range samePath {
		t.Run(tc.name, func(t *testing.T) {
			inside, mounted := hostPaths[tc.path]
			if !mounted {
				t.Fatalf("host path %s is not mounted", tc.path)
			}
			if inside != tc.path {
				t.Errorf("host %s is mounted at %s, want the same path inside", tc.path, inside)
			}
		})
	}
	t.Run("docker socket", func(t *testing.T) {
		dockerHost := shippedConfig[podmanager.Config](t, m, podmanager.PluginName).DockerEndpoint
		if dockerHost == "" {
			dockerHost = envValue(container, "DOCKER_HOST")
		}
		socket, found := strings.CutPrefix(dockerHost, "unix://")
		if !found {
			t.Fatalf("DOCKER_HOST = %q, want a unix:// socket", dockerHost)
		}
		if inside, mounted := hostPaths["/run"]; !mounted || filepath.Dir(socket) != inside {
			t.Errorf("DOCKER_HOST %s is not in the mount of the host's /run (%q)", dockerHost, inside)
		}
	})
}

func envValue(c corev1.Container, name string) string {
	for _, env := range c.Env {
		if env.Name == name {
			return env.Value
		}
	}
	return ""
}

// shippedConfig is the ConfigMap's config file of the plugin called name,
// decoded as the agent decodes it: strictly, over the plugin's defaults
// (agentwiring.PluginConfigs), and validated.
func shippedConfig[T any](t *testing.T, m *manifests, name string) T {
	t.Helper()
	file, found := agentwiring.LookupPluginConfig(name)
	if !found {
		t.Fatalf("the agent reads no config of a plugin called %s", name)
	}
	content, found := m.configMap.Data[name+".conf"]
	if !found {
		t.Fatalf("configmap has no %s.conf", name)
	}
	cfg := file.New()
	if err := configfile.Decode([]byte(content), cfg); err != nil {
		t.Fatalf("configmap's %s.conf: %v", name, err)
	}
	typed, ok := cfg.(*T)
	if !ok {
		t.Fatalf("%s.conf decodes into %T, not %T", name, cfg, typed)
	}
	return *typed
}

// probeCommandTimeout is how long memif-agent probe waits by default; a
// probe's timeoutSeconds must be longer, so that the command, not
// kubelet, says why the probe failed.
const probeCommandTimeout = 2 * time.Second

// livenessTolerance is how long an agent may go unanswered on a loaded
// node, where starting the probe's process alone takes seconds, before
// kubelet restarts it.
const livenessTolerance = time.Minute

// TestDaemonSetProbes: kubelet asks every probe with memif-agent probe on
// the ConfigMap's root-only probe socket. Not httpGet, tcpSocket or grpc:
// those reach a port any local user can fill with connections. Liveness
// restarts the agent only after livenessTolerance without an answer.
func TestDaemonSetProbes(t *testing.T) {
	m := loadManifests(t)
	container := agentContainer(t, m)
	socket := shippedConfig[health.Config](t, m, health.PluginName).ProbeSocket
	cases := []struct {
		name  string
		probe *corev1.Probe
		want  string
	}{
		{"startup", container.StartupProbe, "liveness"},
		{"liveness", container.LivenessProbe, "liveness"},
		{"readiness", container.ReadinessProbe, "readiness"},
	}
	// The agent may wait for the one it replaces before its start.
	if probe := container.StartupProbe; probe != nil {
		window := time.Duration(probe.PeriodSeconds*probe.FailureThreshold) * time.Second
		if longest := devicemanager.NodeLockWait + agent.DefaultStartTimeout; window <= longest {
			t.Errorf("the startup probe gives the agent %v; its start may take %v (waiting for the agent it replaces, then starting)", window, longest)
		}
	}
	if probe := container.LivenessProbe; probe != nil {
		if window := time.Duration(probe.PeriodSeconds*probe.FailureThreshold) * time.Second; window < livenessTolerance {
			t.Errorf("the liveness probe restarts an agent unanswered for %v; a loaded node needs %v", window, livenessTolerance)
		}
	}
	t.Run("socket directory is the pod's own", func(t *testing.T) {
		dir := filepath.Dir(socket)
		for _, mount := range container.VolumeMounts {
			if mount.MountPath != dir {
				continue
			}
			for _, volume := range m.daemonSet.Spec.Template.Spec.Volumes {
				if volume.Name == mount.Name && volume.EmptyDir == nil {
					t.Errorf("the probe socket's directory %s is volume %s, want an emptyDir: a new agent's probes must not reach the agent it replaces", dir, volume.Name)
				}
			}
			return
		}
		t.Errorf("nothing is mounted at the probe socket's directory %s: the root file system is read-only", dir)
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.probe == nil || tc.probe.Exec == nil {
				t.Fatalf("%s probe is not an exec probe (%+v): kubelet must not ask the agent on a port any local user can fill", tc.name, tc.probe)
			}
			want := []string{"memif-agent", "probe", tc.want}
			if socket != probesocket.DefaultPath {
				want = []string{"memif-agent", "probe", "-socket", socket, tc.want}
			}
			if command := tc.probe.Exec.Command; !slices.Equal(command, want) {
				t.Errorf("command = %q, want %q (health.conf's probe-socket is %s)", command, want, socket)
			}
			if timeout := time.Duration(tc.probe.TimeoutSeconds) * time.Second; timeout <= probeCommandTimeout {
				t.Errorf("timeoutSeconds = %d, want longer than the command's own %v", tc.probe.TimeoutSeconds, probeCommandTimeout)
			}
		})
	}
}

// TestHTTPServerListensOnLoopback: with hostNetwork, any other address of
// the agent's HTTP server would be reachable from the network.
func TestHTTPServerListensOnLoopback(t *testing.T) {
	m := loadManifests(t)
	var httpConf struct {
		Endpoint string `json:"endpoint"`
	}
	if err := yaml.UnmarshalStrict([]byte(m.configMap.Data["http.conf"]), &httpConf); err != nil {
		t.Fatalf("configmap's http.conf: %v", err)
	}
	host, _, err := net.SplitHostPort(httpConf.Endpoint)
	if err != nil {
		t.Fatalf("configmap's http.conf endpoint %q: %v", httpConf.Endpoint, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("http.conf endpoint %q is not loopback: with hostNetwork it would be reachable from the network", httpConf.Endpoint)
	}
}

func TestDaemonSetPodSettings(t *testing.T) {
	m := loadManifests(t)
	container := agentContainer(t, m)
	spec := m.daemonSet.Spec.Template.Spec
	security := container.SecurityContext
	cases := []struct {
		name string
		ok   bool
	}{
		{"namespace of the daemonset is the manifests' namespace", m.daemonSet.Namespace == m.namespace.Name},
		{"service account exists in that namespace", spec.ServiceAccountName == m.serviceAccount.Name && m.serviceAccount.Namespace == m.namespace.Name},
		{"no API token mounted", spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken},
		{"config volume is the configmap", configVolumeIs(spec, m.configMap.Name) && m.configMap.Namespace == m.namespace.Name},
		{"agent reads the mounted config dir", slices.Contains(container.Args, "--config-dir="+mountsOf(container)["config"].MountPath)},
		{"cpu and memory requested", !container.Resources.Requests.Cpu().IsZero() && !container.Resources.Requests.Memory().IsZero()},
		{"memory limited", !container.Resources.Limits.Memory().IsZero()},
		{"selector matches the pod labels", labelsMatch(m.daemonSet.Spec.Selector.MatchLabels, m.daemonSet.Spec.Template.Labels)},
		{"not privileged", security != nil && security.Privileged != nil && !*security.Privileged},
		{"no privilege escalation", security != nil && security.AllowPrivilegeEscalation != nil && !*security.AllowPrivilegeEscalation},
		{"every capability dropped first", security != nil && security.Capabilities != nil && slices.Contains(security.Capabilities.Drop, "ALL")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Error("not so in the DaemonSet of memif-agent.yaml")
			}
		})
	}
}

func configVolumeIs(spec corev1.PodSpec, configMapName string) bool {
	for _, volume := range spec.Volumes {
		if volume.Name == "config" {
			return volume.ConfigMap != nil && volume.ConfigMap.Name == configMapName
		}
	}
	return false
}

func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for key, value := range selector {
		if labels[key] != value {
			return false
		}
	}
	return true
}

func TestConfigMapHasEveryPluginConfig(t *testing.T) {
	m := loadManifests(t)
	examples, err := filepath.Glob("../plugins/*/*.conf")
	if err != nil {
		t.Fatalf("listing plugin config examples: %v", err)
	}
	if len(examples) == 0 {
		t.Fatal("no plugin config example found under plugins/")
	}
	for _, example := range examples {
		name := filepath.Base(example)
		t.Run(name, func(t *testing.T) {
			if _, found := m.configMap.Data[name]; !found {
				t.Errorf("the ConfigMap has no %s (example in %s)", name, example)
			}
		})
	}
	// Every file the agent reads, the framework's included, is shipped
	// and decodes strictly into the type the agent reads it as.
	for _, file := range agentwiring.PluginConfigs {
		name := file.Name + ".conf"
		t.Run(name+" decodes", func(t *testing.T) {
			content, found := m.configMap.Data[name]
			if !found {
				t.Fatalf("the ConfigMap has no %s", name)
			}
			if err := configfile.Decode([]byte(content), file.New()); err != nil {
				t.Errorf("configmap's %s: %v", name, err)
			}
		})
	}
}

func TestExamplePodRequestsAMemif(t *testing.T) {
	m := loadManifests(t)
	containers := m.examplePod.Spec.Containers
	if len(containers) != 1 {
		t.Fatalf("example pod has %d containers, want 1", len(containers))
	}
	container := containers[0]
	limit, found := container.Resources.Limits[corev1.ResourceName(dmapi.DefaultResourceName)]
	if !found || limit.Value() != 1 {
		t.Errorf("example pod limits = %v, want %s: 1", container.Resources.Limits, dmapi.DefaultResourceName)
	}
	command := strings.Join(append(container.Command, container.Args...), " ")
	for _, env := range []string{dmapi.EnvMemifSocket, dmapi.EnvMemifSecret} {
		if !strings.Contains(command, "$"+env) {
			t.Errorf("example pod's command does not read $%s: %s", env, command)
		}
	}
}

// TestConfigMapHoldsTheWiringExample: the ConfigMap ships memifwiring.conf
// as documented in plugins/memifwiring, every key with its comment.
func TestConfigMapHoldsTheWiringExample(t *testing.T) {
	m := loadManifests(t)
	example, err := os.ReadFile("../plugins/memifwiring/memifwiring.conf")
	if err != nil {
		t.Fatal(err)
	}
	shipped := m.configMap.Data["memifwiring.conf"]
	if shipped != string(example) {
		t.Errorf("the ConfigMap's memifwiring.conf differs from plugins/memifwiring/memifwiring.conf:\n%s", shipped)
	}
	if err := configfile.Decode([]byte(shipped), &wiring.Config{}); err != nil {
		t.Errorf("configmap's memifwiring.conf: %v", err)
	}
}
