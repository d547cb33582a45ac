package k8s_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// rendered are the objects of one manifest file rendered from the chart
// (scripts/chart.sh: k8s/memif-agent.yaml, k8s/vpp/, k8s/dra/), or of a
// helm template of it, each decoded strictly. An object the chart did not
// render is its zero value; its kind is then absent from kinds.
type rendered struct {
	kinds              []string
	namespace          corev1.Namespace
	serviceAccount     corev1.ServiceAccount
	configMap          corev1.ConfigMap
	daemonSet          appsv1.DaemonSet
	service            corev1.Service
	deviceClass        resourceapi.DeviceClass
	clusterRole        rbacv1.ClusterRole
	clusterRoleBinding rbacv1.ClusterRoleBinding
	// clusterRoles and clusterRoleBindings are every one rendered (the DRA
	// driver's and the cross-node networks'), clusterRole and
	// clusterRoleBinding the first.
	clusterRoles        []rbacv1.ClusterRole
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	role                rbacv1.Role
	roleBinding         rbacv1.RoleBinding
	policy              admissionv1.ValidatingAdmissionPolicy
	policyBinding       admissionv1.ValidatingAdmissionPolicyBinding
	// policies and policyBindings are every one rendered (the DRA
	// driver's and the cross-node networks'), policy and policyBinding
	// the first.
	policies       []admissionv1.ValidatingAdmissionPolicy
	policyBindings []admissionv1.ValidatingAdmissionPolicyBinding
	// serviceMonitor is the Prometheus operator's CRD, whose Go types
	// this module does not import.
	serviceMonitor map[string]any
}

// has says whether the chart rendered an object of kind.
func (r *rendered) has(kind string) bool { return slices.Contains(r.kinds, kind) }

// targets maps each kind the chart renders to where it decodes.
func (r *rendered) targets() map[string]any {
	return map[string]any{
		"Namespace":                        &r.namespace,
		"ServiceAccount":                   &r.serviceAccount,
		"ConfigMap":                        &r.configMap,
		"DaemonSet":                        &r.daemonSet,
		"Service":                          &r.service,
		"DeviceClass":                      &r.deviceClass,
		"ClusterRole":                      &r.clusterRole,
		"ClusterRoleBinding":               &r.clusterRoleBinding,
		"Role":                             &r.role,
		"RoleBinding":                      &r.roleBinding,
		"ValidatingAdmissionPolicy":        &r.policy,
		"ValidatingAdmissionPolicyBinding": &r.policyBinding,
		"ServiceMonitor":                   &r.serviceMonitor,
	}
}

// decodeRendered decodes every document of content strictly into its
// kind's place. A kind the chart is not known to render, or rendered
// twice, is an error.
func decodeRendered(content []byte) (*rendered, error) {
	r := &rendered{}
	targets := r.targets()
	for i, document := range documentSeparator.Split(string(content), -1) {
		jsonContent, err := yaml.YAMLToJSONStrict([]byte(document))
		if err != nil {
			return nil, fmt.Errorf("document %d: not valid YAML: %w", i, err)
		}
		if string(jsonContent) == "null" {
			continue // comments only
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(jsonContent, &meta); err != nil {
			return nil, fmt.Errorf("document %d: not a YAML object: %w", i, err)
		}
		target, known := targets[meta.Kind]
		if !known {
			return nil, fmt.Errorf("document %d: kind %q is not one the chart renders: add it to rendered", i, meta.Kind)
		}
		if err := r.decode([]byte(document), meta.Kind, target); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		r.kinds = append(r.kinds, meta.Kind)
	}
	return r, nil
}

// decode decodes document, of kind, into target, and the cluster roles,
// the admission policies and their bindings into their lists too; another
// kind rendered twice is an error.
func (r *rendered) decode(document []byte, kind string, target any) error {
	switch kind {
	case "ValidatingAdmissionPolicy":
		var policy admissionv1.ValidatingAdmissionPolicy
		if err := decodeStrict(document, kind, &policy); err != nil {
			return err
		}
		r.policies = append(r.policies, policy)
		r.policy = r.policies[0]
		return nil
	case "ValidatingAdmissionPolicyBinding":
		var binding admissionv1.ValidatingAdmissionPolicyBinding
		if err := decodeStrict(document, kind, &binding); err != nil {
			return err
		}
		r.policyBindings = append(r.policyBindings, binding)
		r.policyBinding = r.policyBindings[0]
		return nil
	case "ClusterRole":
		var role rbacv1.ClusterRole
		if err := decodeStrict(document, kind, &role); err != nil {
			return err
		}
		r.clusterRoles = append(r.clusterRoles, role)
		r.clusterRole = r.clusterRoles[0]
		return nil
	case "ClusterRoleBinding":
		var binding rbacv1.ClusterRoleBinding
		if err := decodeStrict(document, kind, &binding); err != nil {
			return err
		}
		r.clusterRoleBindings = append(r.clusterRoleBindings, binding)
		r.clusterRoleBinding = r.clusterRoleBindings[0]
		return nil
	}
	if r.has(kind) {
		return fmt.Errorf("a second %s", kind)
	}
	return decodeStrict(document, kind, target)
}

// loadRendered decodes the rendered manifest file at path.
func loadRendered(t *testing.T, path string) *rendered {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := decodeRendered(content)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// TestEveryManifestIsDecoded: each YAML file of k8s/ is read by a test,
// so that none goes unchecked.
func TestEveryManifestIsDecoded(t *testing.T) {
	known := []string{
		"memif-agent.yaml", "example-pod.yaml",
		"vpp/memif-agent.yaml",
		"dra/memif-agent.yaml", "dra/example-pod.yaml", "dra/resourceclaimtemplate.yaml",
	}
	onDisk, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"vpp", "dra"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		onDisk = append(onDisk, files...)
	}
	for _, name := range onDisk {
		if !slices.Contains(known, name) {
			t.Errorf("%s is not decoded by any test of k8s/", name)
		}
	}
	for _, name := range known {
		if !slices.Contains(onDisk, name) {
			t.Errorf("%s is missing", name)
		}
	}
}

// TestRenderedManifestsSayWhereTheyComeFrom: a reader of k8s/ learns the
// files are the chart's, to be changed there.
func TestRenderedManifestsSayWhereTheyComeFrom(t *testing.T) {
	for _, path := range []string{"memif-agent.yaml", "vpp/memif-agent.yaml", "dra/memif-agent.yaml"} {
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(content), "# Generated by scripts/chart.sh") || !strings.Contains(string(content), "Edit the chart") {
			t.Errorf("%s does not start by saying it is rendered from the chart", path)
		}
	}
}
