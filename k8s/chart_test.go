package k8s_test

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/crossnode"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/dradriver"
	"github.com/contivpp/memif-agent/plugins/metrics/listener"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/vswitch"
	"github.com/contivpp/memif-agent/test/kit/needs"
)

// chartDir is the Helm chart, the one source of the manifests.
const chartDir = "../deploy/helm/memif-agent"

// helmBinary is the helm scripts/peers.sh built into the peers cache
// ($PEERS_CACHE, default /var/cache/memif-agent/peers).
func helmBinary(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("PEERS_CACHE")
	if cache == "" {
		cache = "/var/cache/memif-agent/peers"
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "helm-v3.*"))
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], ".done")); err == nil {
			return filepath.Join(dirs[i], "helm")
		}
	}
	needs.Unavailable(t, "no helm in %s (run scripts/peers.sh helm)", cache)
	return ""
}

// renderChart runs helm template on the chart as release memif-agent in
// namespace memif-agent with args, and decodes what it renders; a
// template's failure is returned with helm's message.
func renderChart(t *testing.T, args ...string) (*rendered, error) {
	t.Helper()
	return renderRelease(t, "memif-agent", "memif-agent", args...)
}

// renderRelease is renderChart for release in namespace.
func renderRelease(t *testing.T, release, namespace string, args ...string) (*rendered, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, &helmError{msg: strings.TrimSpace(stderr.String())}
	}
	r, err := decodeRendered(out)
	if err != nil {
		t.Fatalf("helm template %s: %v", strings.Join(args, " "), err)
	}
	return r, nil
}

type helmError struct{ msg string }

func (e *helmError) Error() string { return e.msg }

// TestGeneratedFilesMatchTheChart: k8s/memif-agent.yaml, k8s/vpp/,
// k8s/dra/ and the chart's copies of the plugins' config examples are
// what scripts/chart.sh makes of the chart now (it also lints the chart
// for each value combination of ci/).
func TestGeneratedFilesMatchTheChart(t *testing.T) {
	helmBinary(t)
	cmd := exec.Command("../scripts/chart.sh", "--check")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/chart.sh --check: %v\n%s", err, out)
	}
}

func container(t *testing.T, r *rendered) corev1.Container {
	t.Helper()
	containers := r.daemonSet.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		t.Fatalf("the DaemonSet has %d containers, want 1", len(containers))
	}
	return containers[0]
}

func hostPathMountedAt(r *rendered, path string) bool {
	spec := r.daemonSet.Spec.Template.Spec
	for _, mount := range spec.Containers[0].VolumeMounts {
		if mount.MountPath != path {
			continue
		}
		for _, volume := range spec.Volumes {
			if volume.Name == mount.Name && volume.HostPath != nil && volume.HostPath.Path == path {
				return true
			}
		}
	}
	return false
}

// TestChartValues: what each value changes in the rendered manifests, read
// back as the agent reads its config files and as the API server reads
// the objects.
func TestChartValues(t *testing.T) {
	cases := []struct {
		name string
		// release and namespace default to memif-agent.
		release, namespace string
		args               []string
		wantErr            string
		check              func(t *testing.T, r *rendered)
	}{
		{
			name: "defaults: device plugin, no VPP, metrics Service, nothing of DRA",
			check: func(t *testing.T, r *rendered) {
				want := []string{"ServiceAccount", "ConfigMap", "Service", "DaemonSet"}
				if !slices.Equal(r.kinds, want) {
					t.Errorf("kinds = %v, want %v", r.kinds, want)
				}
				dm, err := dmconfig.Parse([]byte(r.configMap.Data["devicemanager.conf"]))
				if err != nil || !dm.DevicePlugin || dm.ClaimDeviceCount != 0 {
					t.Errorf("devicemanager.conf = %+v, %v; want the device plugin alone", dm, err)
				}
				c := container(t, r)
				if c.Image != "memif-agent:0.1.0" {
					t.Errorf("image = %s, want memif-agent:<appVersion>", c.Image)
				}
				selector := r.daemonSet.Spec.Template.Spec.NodeSelector
				if selector[NodeOptInLabel] != "true" {
					t.Errorf("nodeSelector = %v, want the opt-in label", selector)
				}
				// The new agent of an update starts beside the old one,
				// which hands the node over: it must know its pod UID and
				// be schedulable there, so no host port.
				rolling := r.daemonSet.Spec.UpdateStrategy.RollingUpdate
				if rolling == nil || rolling.MaxSurge == nil || rolling.MaxSurge.IntValue() != 1 || rolling.MaxUnavailable == nil || rolling.MaxUnavailable.IntValue() != 0 {
					t.Errorf("updateStrategy = %+v, want RollingUpdate maxSurge 1, maxUnavailable 0", r.daemonSet.Spec.UpdateStrategy)
				}
				podUID := slices.IndexFunc(c.Env, func(env corev1.EnvVar) bool {
					return env.Name == dmapi.PodUIDEnv && env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "metadata.uid"
				})
				if podUID < 0 {
					t.Errorf("$%s is not the pod's metadata.uid: %+v", dmapi.PodUIDEnv, c.Env)
				}
				if r.daemonSet.Spec.Template.Spec.HostNetwork && len(c.Ports) > 0 {
					t.Errorf("container ports %+v on the host network: host ports, which keep a surge pod off the node", c.Ports)
				}
			},
		},
		{
			name: "metrics: the listener's port in metrics.conf, the container and the Service",
			args: []string{"--set", "metrics.port=9800"},
			check: func(t *testing.T, r *rendered) {
				cfg := listener.Config{}
				if err := configfile.Decode([]byte(r.configMap.Data["metrics.conf"]), &cfg); err != nil || cfg.Port != 9800 || cfg.Address != "" {
					t.Errorf("metrics.conf = %+v, %v; want port 9800 and the address from $%s", cfg, err, listener.AddressEnv)
				}
				c := container(t, r)
				podIP := slices.IndexFunc(c.Env, func(env corev1.EnvVar) bool {
					return env.Name == listener.AddressEnv && env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "status.podIP"
				})
				if podIP < 0 {
					t.Errorf("$%s is not the pod's status.podIP: %+v", listener.AddressEnv, c.Env)
				}
				ports := r.service.Spec.Ports
				if len(ports) != 1 || ports[0].Name != "metrics" || ports[0].Port != 9800 || ports[0].TargetPort.IntValue() != 9800 {
					t.Errorf("Service ports = %+v, want metrics 9800 to the listener's port 9800", ports)
				}
				if !labelsMatch(r.service.Spec.Selector, r.daemonSet.Spec.Template.Labels) || r.service.Spec.Type != corev1.ServiceTypeClusterIP {
					t.Errorf("Service %+v does not select the agent's pods %v", r.service.Spec, r.daemonSet.Spec.Template.Labels)
				}
			},
		},
		{
			name: "metrics off: no Service",
			args: []string{"--set", "metrics.enabled=false"},
			check: func(t *testing.T, r *rendered) {
				if r.has("Service") {
					t.Error("a Service is rendered")
				}
			},
		},
		{
			name: "ServiceMonitor scrapes the metrics Service",
			args: []string{"-f", chartDir + "/ci/servicemonitor-values.yaml"},
			check: func(t *testing.T, r *rendered) {
				spec, _ := r.serviceMonitor["spec"].(map[string]any)
				selector, _ := spec["selector"].(map[string]any)
				matchLabels := map[string]string{}
				if labels, ok := selector["matchLabels"].(map[string]any); ok {
					for key, value := range labels {
						matchLabels[key], _ = value.(string)
					}
				}
				endpoints, _ := spec["endpoints"].([]any)
				var port any
				if len(endpoints) == 1 {
					port = endpoints[0].(map[string]any)["port"]
				}
				if r.serviceMonitor["apiVersion"] != "monitoring.coreos.com/v1" || !labelsMatch(matchLabels, r.service.Labels) || port != "metrics" {
					t.Errorf("ServiceMonitor %v does not scrape port metrics of Service %s (labels %v)", r.serviceMonitor, r.service.Name, r.service.Labels)
				}
			},
		},
		{
			name:    "ServiceMonitor without the Service",
			args:    []string{"--set", "metrics.enabled=false", "--set", "metrics.serviceMonitor.enabled=true"},
			wantErr: "metrics.serviceMonitor.enabled needs metrics.enabled",
		},
		{
			name:    "DRA on in another release and namespace: the policy names that service account",
			release: "edge", namespace: "net",
			args: []string{"--set", "dra.enabled=true", "--set", "dra.deviceCount=8"},
			check: func(t *testing.T, r *rendered) {
				for _, kind := range []string{"DeviceClass", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
					if !r.has(kind) {
						t.Errorf("no %s", kind)
					}
				}
				user := `"system:serviceaccount:net:` + r.serviceAccount.Name + `"`
				if len(r.policy.Spec.MatchConditions) != 1 || !strings.Contains(r.policy.Spec.MatchConditions[0].Expression, user) || r.serviceAccount.Namespace != "net" {
					t.Errorf("the policy's match conditions %+v do not name %s", r.policy.Spec.MatchConditions, user)
				}
				if s := r.clusterRoleBinding.Subjects; len(s) != 1 || s[0].Name != r.serviceAccount.Name || s[0].Namespace != "net" {
					t.Errorf("the binding's subjects %+v are not the service account %s/%s", s, r.serviceAccount.Namespace, r.serviceAccount.Name)
				}
				dm, err := dmconfig.Parse([]byte(r.configMap.Data["devicemanager.conf"]))
				if err != nil || dm.ClaimDeviceCount != 8 || !dm.DevicePlugin {
					t.Errorf("devicemanager.conf = %+v, %v; want 8 claim devices beside the device plugin", dm, err)
				}
				if dra, err := dradriver.ParseConfig([]byte(r.configMap.Data["dradriver.conf"])); err != nil || !dra.Enabled {
					t.Errorf("dradriver.conf = %+v, %v; want it enabled", dra, err)
				}
			},
		},
		{
			name:    "networks across nodes: Nodes and the shares' Leases, the token, the node and namespace; each node's underlay in crossnode.conf",
			release: "edge", namespace: "net",
			args: []string{"--set", "crossNode.enabled=true", "--set", "dra.enabled=true",
				"--set-json", `config={"crossnode.conf": {"nodes": {"node-a": {"underlay-interface": "vpp-ul", "underlay-address": "192.168.230.1/24"}}}}`},
			check: func(t *testing.T, r *rendered) {
				if len(r.clusterRoles) != 2 || len(r.clusterRoleBindings) != 2 {
					t.Fatalf("cluster roles %d, bindings %d; want the DRA driver's and the cross-node networks'", len(r.clusterRoles), len(r.clusterRoleBindings))
				}
				i := slices.IndexFunc(r.clusterRoles, func(role rbacv1.ClusterRole) bool { return strings.HasSuffix(role.Name, "-crossnode") })
				j := slices.IndexFunc(r.clusterRoleBindings, func(b rbacv1.ClusterRoleBinding) bool { return strings.HasSuffix(b.Name, "-crossnode") })
				if i < 0 || j < 0 {
					t.Fatalf("no cluster role or binding of the cross-node networks among %d and %d", len(r.clusterRoles), len(r.clusterRoleBindings))
				}
				nodes, nodesBinding := r.clusterRoles[i], r.clusterRoleBindings[j]
				if len(nodes.Rules) != 2 || !slices.Equal(nodes.Rules[0].Resources, []string{"nodes"}) || !slices.Equal(nodes.Rules[0].Verbs, []string{"get", "list", "watch", "patch"}) {
					t.Errorf("cluster role %s rules %+v, want get, list, watch and patch on nodes, and the pods' events", nodes.Name, nodes.Rules)
				}
				checkGrantsEvents(t, nodes)
				leases := r.role
				if leases.Namespace != "net" || len(leases.Rules) != 1 || !slices.Equal(leases.Rules[0].Resources, []string{"leases"}) ||
					!slices.Equal(leases.Rules[0].Verbs, []string{"get", "list", "watch", "create", "update", "delete"}) {
					t.Errorf("role %s/%s rules %+v, want get, list, watch, create, update and delete on leases in net", leases.Namespace, leases.Name, leases.Rules)
				}
				for _, binding := range []struct {
					role     string
					subjects []rbacv1.Subject
				}{{nodesBinding.RoleRef.Name, nodesBinding.Subjects}, {r.roleBinding.RoleRef.Name, r.roleBinding.Subjects}} {
					if s := binding.subjects; len(s) != 1 || s[0].Name != r.serviceAccount.Name || s[0].Namespace != "net" {
						t.Errorf("the binding of %s names %+v, not the service account", binding.role, s)
					}
				}
				if nodesBinding.RoleRef.Name != nodes.Name || r.roleBinding.RoleRef.Name != leases.Name {
					t.Errorf("the bindings name %s and %s, the roles are %s and %s", nodesBinding.RoleRef.Name, r.roleBinding.RoleRef.Name, nodes.Name, leases.Name)
				}
				if token := r.daemonSet.Spec.Template.Spec.AutomountServiceAccountToken; token == nil || !*token {
					t.Error("the agent gets no service account token")
				}
				c := container(t, r)
				for env, field := range map[string]string{crossnode.NodeNameEnv: "spec.nodeName", crossnode.NamespaceEnv: "metadata.namespace"} {
					if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
						return e.Name == env && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == field
					}) {
						t.Errorf("$%s is not the pod's %s: %+v", env, field, c.Env)
					}
				}
				checkCrossNodePolicies(t, r)
				var cfg crossnode.Config
				if err := configfile.Decode([]byte(r.configMap.Data["crossnode.conf"]), &cfg); err != nil || cfg.For("node-a").Address != "192.168.230.1/24" || cfg.For("node-b").Address != "" {
					t.Errorf("crossnode.conf = %+v, %v; want node-a's underlay alone", cfg, err)
				}
			},
		},
		{
			name: "networks across nodes without DRA: the token posts the pods' events, which the cross-node role grants",
			args: []string{"--set", "crossNode.enabled=true"},
			check: func(t *testing.T, r *rendered) {
				if len(r.clusterRoles) != 1 || !strings.HasSuffix(r.clusterRole.Name, "-crossnode") {
					t.Fatalf("cluster roles %d (first %s); want the cross-node networks' alone", len(r.clusterRoles), r.clusterRole.Name)
				}
				if token := r.daemonSet.Spec.Template.Spec.AutomountServiceAccountToken; token == nil || !*token {
					t.Error("the agent gets no service account token")
				}
				checkGrantsEvents(t, r.clusterRole)
			},
		},
		{
			name: "DRA alone: no device plugin",
			args: []string{"--set", "dra.enabled=true", "--set", "devicePlugin.enabled=false"},
			check: func(t *testing.T, r *rendered) {
				dm, err := dmconfig.Parse([]byte(r.configMap.Data["devicemanager.conf"]))
				if err != nil || dm.DevicePlugin || dm.ClaimDeviceCount == 0 {
					t.Errorf("devicemanager.conf = %+v, %v; want claim devices alone", dm, err)
				}
			},
		},
		{
			name:    "neither device plugin nor DRA",
			args:    []string{"--set", "devicePlugin.enabled=false"},
			wantErr: "devicePlugin.enabled and dra.enabled are both false",
		},
		{
			name: "VPP at another socket: vswitch.conf names it, its directory is the host's",
			args: []string{"--set", "vpp.enabled=true", "--set", "vpp.apiSocket=/var/run/vpp-main/api.sock"},
			check: func(t *testing.T, r *rendered) {
				cfg := vswitch.DefaultConfig()
				if err := configfile.Decode([]byte(r.configMap.Data["vswitch.conf"]), &cfg); err != nil || cfg.VPPAPISocket != "/var/run/vpp-main/api.sock" {
					t.Errorf("vswitch.conf = %+v, %v", cfg, err)
				}
				if !hostPathMountedAt(r, "/var/run/vpp-main") {
					t.Error("the host's /var/run/vpp-main is not mounted at the same path")
				}
			},
		},
		{
			name: "networks and the default network",
			args: []string{"--set-json", `networks=[{"name":"blue","type":"l3","subnet":"10.80.0.0/24","rx-mode":"interrupt"},{"name":"pods","type":"l2"}]`, "--set", "defaultNetwork=pods"},
			check: func(t *testing.T, r *rendered) {
				cfg, err := netconf.Decode([]byte(r.configMap.Data["networks.conf"]))
				if err != nil {
					t.Fatalf("networks.conf: %v\n%s", err, r.configMap.Data["networks.conf"])
				}
				blue, ok := cfg.Network("blue")
				if !ok || blue.Type != netconf.L3 || blue.Subnet != "10.80.0.0/24" || cfg.DefaultNetwork != "pods" || len(cfg.Networks) != 2 {
					t.Errorf("networks.conf = %+v", cfg)
				}
			},
		},
		{
			name: "a config key over the documented default, and one the file leaves out",
			args: []string{"--set", "config.devicemanager\\.conf.device-count=128", "--set", "config.devicemanager\\.conf.dir-group=memif"},
			check: func(t *testing.T, r *rendered) {
				dm, err := dmconfig.Parse([]byte(r.configMap.Data["devicemanager.conf"]))
				if err != nil || dm.DeviceCount != 128 || dm.DirGroup != "memif" {
					t.Errorf("devicemanager.conf = %+v, %v; want device-count 128, dir-group memif", dm, err)
				}
			},
		},
		{
			name:    "a config file the chart does not ship",
			args:    []string{"--set", "config.devicemanger\\.conf.device-count=128"},
			wantErr: "the chart ships no devicemanger.conf",
		},
		{
			// Helm merges maps with the defaults: a null drops a key.
			name: "image, node selector (the opt-in label dropped), tolerations, resources, update strategy",
			args: []string{"--set", "image.repository=registry.example/memif-agent", "--set", "image.tag=v1.2.3",
				"--set-json", `nodeSelector={"vswitch":"vpp","memif.contivpp.io/enabled":null}`, "--set-json", `tolerations=[{"key":"dedicated","operator":"Equal","value":"net","effect":"NoSchedule"}]`,
				"--set", "resources.limits.memory=1Gi", "--set-json", `updateStrategy={"type":"OnDelete"}`},
			check: func(t *testing.T, r *rendered) {
				spec := r.daemonSet.Spec.Template.Spec
				c := container(t, r)
				if c.Image != "registry.example/memif-agent:v1.2.3" {
					t.Errorf("image = %s", c.Image)
				}
				if len(spec.NodeSelector) != 2 || spec.NodeSelector["vswitch"] != "vpp" || spec.NodeSelector[NodeOptInLabel] != "" {
					t.Errorf("nodeSelector = %v, want vswitch=vpp and the linux default", spec.NodeSelector)
				}
				if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "dedicated" {
					t.Errorf("tolerations = %+v", spec.Tolerations)
				}
				if c.Resources.Limits.Memory().String() != "1Gi" {
					t.Errorf("limits = %v", c.Resources.Limits)
				}
				if r.daemonSet.Spec.UpdateStrategy.Type != "OnDelete" {
					t.Errorf("updateStrategy = %+v", r.daemonSet.Spec.UpdateStrategy)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release, namespace := cmp.Or(tc.release, "memif-agent"), cmp.Or(tc.namespace, "memif-agent")
			r, err := renderRelease(t, release, namespace, tc.args...)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("helm template error = %v, want one saying %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("helm template: %v", err)
			}
			tc.check(t, r)
		})
	}
}

// TestConfigChangeRollsTheAgents: a change of a config file the agent
// reads at start changes the pod template (the agents restart with it);
// networks.conf, which the agent applies live, does not.
// checkGrantsEvents fails t unless role lets the agent post its Events on
// pods (MemifRefused, MemifWired): client-go creates an event and patches
// it to count its repeats.
func checkGrantsEvents(t *testing.T, role rbacv1.ClusterRole) {
	t.Helper()
	for _, verb := range []string{"create", "patch"} {
		if !slices.ContainsFunc(role.Rules, func(rule rbacv1.PolicyRule) bool {
			return slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "events") && slices.Contains(rule.Verbs, verb)
		}) {
			t.Errorf("cluster role %s does not let the agent %s events: its events on pods would be refused (rules %+v)", role.Name, verb, role.Rules)
		}
	}
}

func TestConfigChangeRollsTheAgents(t *testing.T) {
	checksum := func(args ...string) string {
		r, err := renderChart(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		return r.daemonSet.Spec.Template.Annotations["memif.contivpp.io/config-checksum"]
	}
	defaults := checksum()
	if defaults == "" {
		t.Fatal("the pod template has no config checksum")
	}
	if logs := checksum("--set", "config.logs\\.conf.default-level=debug"); logs == defaults {
		t.Error("a logs.conf change leaves the pod template as it was: the agents would keep the old level")
	}
	if networks := checksum("--set", "defaultNetwork=red"); networks != defaults {
		t.Error("a networks.conf change rolls the agents; they apply it live")
	}
}
