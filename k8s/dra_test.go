package k8s_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	dmconfig "github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/dradriver"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
)

// draManifests are k8s/dra/memif-agent.yaml (the chart with
// ci/dra-values.yaml) and the claim template and example pod beside it,
// decoded strictly.
type draManifests struct {
	*rendered
	claimTemplate resourceapi.ResourceClaimTemplate
	examplePod    corev1.Pod
}

func loadDRAManifests(t *testing.T) *draManifests {
	t.Helper()
	m := &draManifests{rendered: loadRendered(t, "dra/memif-agent.yaml")}
	for path, file := range map[string]struct {
		kind   string
		target any
	}{
		"dra/resourceclaimtemplate.yaml": {"ResourceClaimTemplate", &m.claimTemplate},
		"dra/example-pod.yaml":           {"Pod", &m.examplePod},
	} {
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeStrict(content, file.kind, file.target); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return m
}

func TestDRAManifestsHoldWhatTheDriverNeeds(t *testing.T) {
	m := loadDRAManifests(t)
	for _, kind := range []string{"DeviceClass", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !m.has(kind) {
			t.Errorf("dra/memif-agent.yaml has no %s", kind)
		}
	}
}

func TestDeviceClassSelectsTheDriver(t *testing.T) {
	m := loadDRAManifests(t)
	if m.deviceClass.Name != claims.DefaultDriverName || len(m.deviceClass.Spec.Selectors) != 1 ||
		m.deviceClass.Spec.Selectors[0].CEL.Expression != `device.driver == "`+claims.DefaultDriverName+`"` {
		t.Errorf("DeviceClass = %+v, want %s selecting its driver's devices", m.deviceClass, claims.DefaultDriverName)
	}
	requests := m.claimTemplate.Spec.Spec.Devices.Requests
	if len(requests) != 1 || requests[0].Exactly == nil || requests[0].Exactly.DeviceClassName != m.deviceClass.Name || requests[0].Exactly.Count > 1 {
		t.Errorf("the claim template's requests %+v do not ask for one device of %s", requests, m.deviceClass.Name)
	}
}

func TestDRAExamplePodUsesTheTemplate(t *testing.T) {
	m := loadDRAManifests(t)
	spec := m.examplePod.Spec
	if len(spec.ResourceClaims) != 1 || spec.ResourceClaims[0].ResourceClaimTemplateName == nil ||
		*spec.ResourceClaims[0].ResourceClaimTemplateName != m.claimTemplate.Name || m.examplePod.Namespace != m.claimTemplate.Namespace {
		t.Fatalf("example pod's claims %+v do not name the template %s/%s", spec.ResourceClaims, m.claimTemplate.Namespace, m.claimTemplate.Name)
	}
	container := spec.Containers[0]
	if len(container.Resources.Claims) != 1 || container.Resources.Claims[0].Name != spec.ResourceClaims[0].Name {
		t.Errorf("the container's claims %+v do not use the pod's claim %s", container.Resources.Claims, spec.ResourceClaims[0].Name)
	}
	if _, asked := container.Resources.Limits[corev1.ResourceName(dmapi.DefaultResourceName)]; asked {
		t.Errorf("the claim example also asks for the extended resource")
	}
	command := strings.Join(append(container.Command, container.Args...), " ")
	for _, env := range []string{dmapi.EnvMemifSocket, dmapi.EnvMemifSecret} {
		if !strings.Contains(command, "$"+env) {
			t.Errorf("example pod's command does not read $%s", env)
		}
	}
}

func TestDRADaemonSetGivesTheDriverWhatItNeeds(t *testing.T) {
	m := loadDRAManifests(t)
	draCfg, err := dradriver.ParseConfig([]byte(m.configMap.Data["dradriver.conf"]))
	if err != nil || !draCfg.Enabled {
		t.Fatalf("dradriver.conf = %+v, %v; want the driver enabled", draCfg, err)
	}
	dmCfg, err := dmconfig.Parse([]byte(m.configMap.Data["devicemanager.conf"]))
	if err != nil || dmCfg.ClaimDeviceCount < 1 || !dmCfg.DevicePlugin {
		t.Fatalf("devicemanager.conf = %+v, %v; want claim devices and the device plugin still on", dmCfg, err)
	}
	pod := m.daemonSet.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken || m.serviceAccount.AutomountServiceAccountToken == nil || !*m.serviceAccount.AutomountServiceAccountToken {
		t.Error("the driver gets no service account token")
	}
	container := pod.Containers[0]
	nodeName := slices.IndexFunc(container.Env, func(env corev1.EnvVar) bool {
		return env.Name == dradriver.NodeNameEnv && env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	})
	if nodeName < 0 {
		t.Errorf("$%s is not the pod's spec.nodeName: %+v", dradriver.NodeNameEnv, container.Env)
	}
	hostPaths := map[string]string{}
	for _, volume := range pod.Volumes {
		if volume.HostPath != nil {
			hostPaths[volume.Name] = volume.HostPath.Path
		}
	}
	mounted := map[string]string{}
	for _, mount := range container.VolumeMounts {
		mounted[mount.MountPath] = hostPaths[mount.Name]
	}
	for _, dir := range []string{filepath.Dir(draCfg.PluginDataDir), draCfg.RegistrarDir, draCfg.CDIDir} {
		if mounted[dir] != dir {
			t.Errorf("%s is not the host's %s in the agent (mounts %v)", dir, dir, mounted)
		}
	}
}

func TestDRARBACCoversTheDriver(t *testing.T) {
	m := loadDRAManifests(t)
	role, binding := m.clusterRole, m.clusterRoleBinding
	allowed := func(group, resource, verb string) bool {
		for _, rule := range role.Rules {
			if slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) && slices.Contains(rule.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, verb := range []string{"get", "list", "watch", "create", "update", "delete"} {
		if !allowed("resource.k8s.io", "resourceslices", verb) {
			t.Errorf("the driver may not %s resourceslices", verb)
		}
	}
	for _, verb := range []string{"patch", "deletecollection", "*"} {
		if allowed("resource.k8s.io", "resourceslices", verb) {
			t.Errorf("the driver may %s resourceslices, which it never does", verb)
		}
	}
	if !allowed("resource.k8s.io", "resourceclaims", "get") || !allowed("", "nodes", "get") {
		t.Error("the driver may not read claims or its node")
	}
	for _, verb := range []string{"list", "watch", "*"} {
		if allowed("resource.k8s.io", "resourceclaims", verb) {
			t.Errorf("the driver may %s resourceclaims; it reads its node's claims by name", verb)
		}
	}
	for _, verb := range []string{"list", "watch"} {
		if !allowed("", "pods", verb) {
			t.Errorf("the driver may not %s pods: it follows its node's pods to read their claims ahead of kubelet", verb)
		}
	}
	for _, verb := range []string{"get", "create", "update", "patch", "delete", "deletecollection", "*"} {
		if allowed("", "pods", verb) || allowed("", "pods/status", verb) {
			t.Errorf("the driver may %s pods; it only lists and watches those of its node", verb)
		}
	}
	for _, verb := range []string{"create", "patch"} {
		if !allowed("", "events", verb) {
			t.Errorf("the agent may not %s events: its MemifRefused and MemifWired events on pods would be refused", verb)
		}
	}
	// The driver writes its devices' entries in claims' status (the
	// chart's admission policy keeps them to its node's pool), never a
	// claim's spec, and for its own driver's name, on its own node only.
	for _, verb := range []string{"update", "patch"} {
		if allowed("resource.k8s.io", "resourceclaims", verb) {
			t.Errorf("the driver may %s claims: it writes only their status", verb)
		}
		if allowed("resource.k8s.io", "resourceclaims/driver", "arbitrary-node:"+verb) {
			t.Errorf("the driver may arbitrary-node:%s claims' device status: another node's agent could write this node's entries", verb)
		}
	}
	if !allowed("resource.k8s.io", "resourceclaims/status", "update") {
		t.Error("the driver may not update claims' status: its devices' entries would be refused")
	}
	if allowed("resource.k8s.io", "resourceclaims/status", "patch") || allowed("resource.k8s.io", "resourceclaims/driver", "associated-node:patch") {
		t.Error("the driver may patch claims' status, which it never does (it updates the claim as read)")
	}
	for _, rule := range role.Rules {
		if slices.Contains(rule.Resources, "resourceclaims/driver") && !slices.Equal(rule.ResourceNames, []string{claims.DefaultDriverName}) {
			t.Errorf("the driver may write the device status of drivers %v; want its own, %s, alone", rule.ResourceNames, claims.DefaultDriverName)
		}
	}
	if !allowed("resource.k8s.io", "resourceclaims/driver", "associated-node:update") {
		t.Error("the driver may not associated-node:update its devices' status: Kubernetes 1.37 refuses its writes")
	}
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != m.serviceAccount.Name || binding.Subjects[0].Namespace != m.serviceAccount.Namespace {
		t.Errorf("binding %+v does not give %s to the agent's service account", binding, role.Name)
	}
}
