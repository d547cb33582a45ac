package memifnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// ConfigMap is the agent's ConfigMap (the chart's, release memif-agent).
const ConfigMap = "memif-agent-config"

// SetConfigFile replaces the content of one of the agent's config files
// (networks.conf) in its ConfigMap, as `kubectl edit` would. kubelet then
// swaps the file mounted in the agent's container at its next sync of the
// agent's pod.
func (n *Node) SetConfigFile(ctx context.Context, file, content string) error {
	cm, err := n.client.CoreV1().ConfigMaps(Namespace).Get(ctx, ConfigMap, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("memifnode: %w", err)
	}
	if _, ok := cm.Data[file]; !ok {
		return fmt.Errorf("memifnode: ConfigMap %s/%s has no %s", Namespace, ConfigMap, file)
	}
	cm.Data[file] = content
	if _, err := n.client.CoreV1().ConfigMaps(Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("memifnode: update %s in ConfigMap %s/%s: %w", file, Namespace, ConfigMap, err)
	}
	return nil
}

// PodMemif is a pod's one allocation as memifctl gets it, with the
// memif.json the agent wrote into its directory (what the pod's container
// reads as /run/vpp/memif.json).
type PodMemif struct {
	Allocation Allocation
	// JSON is memif.json as written; File is it decoded.
	JSON []byte
	File memifjson.File
}

// PodMemif finds the pod's allocation through memifctl get and reads its
// memif.json from the first node. It fails until the agent has written
// one.
func (n *Node) PodMemif(ctx context.Context, namespace, pod string) (PodMemif, error) {
	return n.PodMemifOn(ctx, n.c.FirstNode(), namespace, pod)
}

// PodMemifOn is PodMemif for a pod on node, from that node's agent and
// paths.
func (n *Node) PodMemifOn(ctx context.Context, node cluster.NodeHost, namespace, pod string) (PodMemif, error) {
	allocations, err := n.MemifctlOn(ctx, node, "get", namespace+"/"+pod)
	if err != nil {
		return PodMemif{}, err
	}
	return readPodMemif(namespace, pod, allocations, node.HostPath)
}

// readPodMemif reads the memif.json of the pod's one allocation, at the
// host's path hostPath gives the node's.
func readPodMemif(namespace, pod string, allocations []Allocation, hostPath func(string) string) (PodMemif, error) {
	if len(allocations) != 1 {
		return PodMemif{}, fmt.Errorf("memifctl get %s/%s: %d allocations, want 1: %+v", namespace, pod, len(allocations), allocations)
	}
	path := filepath.Join(hostPath(filepath.Dir(allocations[0].HostSocket)), memifjson.FileName)
	content, err := os.ReadFile(path)
	if err != nil {
		return PodMemif{}, fmt.Errorf("pod %s/%s: %w", namespace, pod, err)
	}
	var file memifjson.File
	if err := json.Unmarshal(content, &file); err != nil {
		return PodMemif{}, fmt.Errorf("pod %s/%s: decode %s %q: %w", namespace, pod, path, content, err)
	}
	return PodMemif{Allocation: allocations[0], JSON: content, File: file}, nil
}

// Metric returns the value of the agent's metric name with labels (such
// as `reason="unknown-network"`, or "" for none) from its /metrics, on
// the loopback port the DaemonSet's http.conf names. A metric the agent
// does not print is an error.
func (n *Node) Metric(ctx context.Context, name, labels string) (float64, error) {
	return n.MetricOn(ctx, n.c.FirstNode(), name, labels)
}

// MetricOn is Metric from the agent of node: on an added node, its
// loopback is its network namespace's.
func (n *Node) MetricOn(ctx context.Context, node cluster.NodeHost, name, labels string) (float64, error) {
	endpoint, err := n.httpEndpoint(ctx)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+endpoint+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	client := http.DefaultClient
	if added, ok := node.(*cluster.Node); ok {
		transport := &http.Transport{DialContext: added.DialContext}
		defer transport.CloseIdleConnections()
		client = &http.Client{Transport: transport}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("memifnode: the agent's metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("memifnode: GET %s/metrics: %s: %v", endpoint, resp.Status, err)
	}
	series := name
	if labels != "" {
		series += "{" + labels + "}"
	}
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(body)
	if line == nil {
		return 0, fmt.Errorf("memifnode: the agent's /metrics has no %s", series)
	}
	return strconv.ParseFloat(string(line[1]), 64)
}

// httpEndpoint reads the agent's HTTP endpoint from http.conf in its
// ConfigMap (Deploy moved it to a free port).
func (n *Node) httpEndpoint(ctx context.Context) (string, error) {
	cm, err := n.client.CoreV1().ConfigMaps(Namespace).Get(ctx, ConfigMap, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("memifnode: %w", err)
	}
	m := regexp.MustCompile(`(?m)^endpoint:\s*(\S+)`).FindStringSubmatch(cm.Data["http.conf"])
	if m == nil {
		return "", fmt.Errorf("memifnode: no endpoint in http.conf of ConfigMap %s/%s", Namespace, ConfigMap)
	}
	return strings.Trim(m[1], `"`), nil
}

// MemifNetwork is what one memif got from the node's networks, in
// `memifctl -o json get` output.
type MemifNetwork struct {
	MemifID        uint32   `json:"memifId"`
	Network        string   `json:"network"`
	Mode           string   `json:"mode"`
	IPs            []string `json:"ips"`
	Gateway        []string `json:"gateway"`
	Queues         uint32   `json:"queues"`
	RxMode         string   `json:"rxMode"`
	RefusedReason  string   `json:"refusedReason"`
	RefusedMessage string   `json:"refusedMessage"`
}

// MemifNetworks returns what the pod's memifs got from the networks, as
// `memifctl get` shows them.
func (n *Node) MemifNetworks(ctx context.Context, namespace, pod string) ([]MemifNetwork, error) {
	out, err := n.MemifctlText(ctx, "-o", "json", "get", namespace+"/"+pod)
	if err != nil {
		return nil, err
	}
	var memifs []struct {
		Networks []MemifNetwork `json:"networks"`
	}
	if err := json.Unmarshal([]byte(out), &memifs); err != nil {
		return nil, fmt.Errorf("decode memifctl get %s/%s output %q: %w", namespace, pod, out, err)
	}
	var networks []MemifNetwork
	for _, m := range memifs {
		networks = append(networks, m.Networks...)
	}
	return networks, nil
}
