package memifnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

const (
	// ChartDir is the agent's Helm chart, under the repository root.
	ChartDir = "deploy/helm/memif-agent"
	// Release is the Helm release Deploy installs.
	Release = "memif-agent"
)

// helmPath is the helm of the peers cache, built once per process by
// scripts/peers.sh helm.
var helmPath = sync.OnceValues(func() (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "peers.sh"), "helm")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("memifnode: build helm with scripts/peers.sh helm: %w: %s", err, stderr.String())
	}
	for line := range strings.Lines(string(out)) {
		if dir, ok := strings.CutPrefix(strings.TrimSpace(line), "helm="); ok {
			return filepath.Join(dir, "helm"), nil
		}
	}
	return "", fmt.Errorf("memifnode: scripts/peers.sh helm printed %q, no helm= line", out)
})

// Helm runs the peers cache's helm against the cluster (its kubeconfig;
// helm's cache, config and data under the cluster's work dir) and returns
// its combined output.
func Helm(ctx context.Context, c *cluster.Cluster, args ...string) (string, error) {
	helm, err := helmPath()
	if err != nil {
		return "", err
	}
	home := filepath.Join(c.Dir(), "helm")
	cmd := exec.CommandContext(ctx, helm, append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ApplyChartTemplates renders only the chart's templates named (such as
// templates/rbac.yaml) with args (--set dra.enabled=true) for release
// memif-agent in Namespace, and applies them with kubectl: the parts of
// the deployment a suite needs without the agent.
func ApplyChartTemplates(ctx context.Context, c *cluster.Cluster, templates []string, args ...string) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	argv := []string{"template", Release, filepath.Join(root, ChartDir), "--namespace", Namespace}
	for _, template := range templates {
		argv = append(argv, "--show-only", template)
	}
	rendered, err := Helm(ctx, c, append(argv, args...)...)
	if err != nil {
		return err
	}
	path := filepath.Join(c.Dir(), "chart-templates.yaml")
	if err := os.WriteFile(path, []byte(rendered), 0o600); err != nil {
		return fmt.Errorf("memifnode: %w", err)
	}
	if _, err := c.Kubectl(ctx, "apply", "-f", path); err != nil {
		return fmt.Errorf("memifnode: apply %s: %w", strings.Join(templates, ", "), err)
	}
	return nil
}

// kitValues are the values Deploy lays over the caller's: the image make
// image tags, the agent's HTTP and metrics ports moved to free ones, and
// Options.ConfigKeys. The agent runs with host networking, and every
// cluster of the harness shares the host's network: two nodes' agents on
// the chart's fixed ports would collide, the second exiting on "address
// already in use" until the first is gone.
func kitValues(httpPort, metricsPort int, configKeys map[string]map[string]string) ([]byte, error) {
	config := map[string]map[string]any{}
	for file, keys := range configKeys {
		config[file] = map[string]any{}
		for key, literal := range keys {
			var value any
			if err := yaml.Unmarshal([]byte(literal), &value); err != nil {
				return nil, fmt.Errorf("memifnode: ConfigKeys %s %s: %q is not a YAML value: %w", file, key, literal, err)
			}
			config[file][key] = value
		}
	}
	values := map[string]any{
		"image":   map[string]any{"tag": "dev"},
		"http":    map[string]any{"port": httpPort},
		"metrics": map[string]any{"port": metricsPort},
		"config":  config,
	}
	return yaml.Marshal(values)
}
