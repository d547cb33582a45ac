package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	resource = "contivpp.io/memif"
	// waitTimeout bounds every wait; it is a failure deadline, not an
	// asserted duration.
	waitTimeout = 90 * time.Second
)

// memifctlAllocation is one allocation in `memifctl -o json` output.
type memifctlAllocation struct {
	AllocationID    string   `json:"allocationId"`
	DeviceIDs       []string `json:"deviceIds"`
	PodNamespace    string   `json:"podNamespace"`
	PodName         string   `json:"podName"`
	HostSocket      string   `json:"hostSocket"`
	HostDir         string   `json:"hostDir"`
	ContainerSocket string   `json:"containerSocket"`
	Secret          string   `json:"secret"`
}

// list runs the real memifctl against a: every allocation, with secrets,
// by allocation ID.
func list(tb testing.TB, a *agenttest.Agent) map[string]memifctlAllocation {
	tb.Helper()
	cmd := exec.Command(filepath.Join(agenttest.BinDir(), "memifctl"), "-socket", a.APISocket, "-o", "json", "--show-secrets", "list")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("memifctl list: %v: %s", err, stderr.String())
	}
	var allocations []memifctlAllocation
	if err := json.Unmarshal(out, &allocations); err != nil {
		tb.Fatalf("decode memifctl list output %q: %v", out, err)
	}
	byID := make(map[string]memifctlAllocation, len(allocations))
	for _, allocation := range allocations {
		byID[allocation.AllocationID] = allocation
	}
	return byID
}

// allocate calls the plugin's Allocate for one container asking ids.
func allocate(ctx context.Context, client pluginapi.DevicePluginClient, ids ...string) (*pluginapi.ContainerAllocateResponse, error) {
	response, err := client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}},
	})
	if err != nil {
		return nil, err
	}
	if len(response.GetContainerResponses()) != 1 {
		return nil, fmt.Errorf("Allocate answered %d container responses for one request", len(response.GetContainerResponses()))
	}
	return response.GetContainerResponses()[0], nil
}

// deviceID is the agent's ID of device n (64..999 devices).
func deviceID(n int) string { return fmt.Sprintf("memif-%03d", n) }

// startKubelet starts kubelet's device manager and pod-resources server;
// it is stopped when the test ends.
func startKubelet(tb testing.TB) (*kubelettest.Kubelet, string) {
	tb.Helper()
	dir, err := os.MkdirTemp("", "fk")
	if err != nil {
		tb.Fatalf("create kubelet directory: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "pod-resources.sock")
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	kubelet, err := kubelettest.Start(ctx, socket)
	if err != nil {
		tb.Fatalf("start kubelet: %v", err)
	}
	tb.Cleanup(func() {
		if err := kubelet.Stop(); err != nil {
			tb.Errorf("stop kubelet: %v", err)
		}
	})
	return kubelet, socket
}

func waitCapacity(tb testing.TB, kubelet *kubelettest.Kubelet, want int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := kubelet.WaitForCapacity(ctx, resource, want); err != nil {
		tb.Fatal(err)
	}
}
