package deviceplugin_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

// dialPlugin connects to the agent's device plugin socket as kubelet does.
func dialPlugin(t *testing.T, socket string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}))
	if err != nil {
		t.Fatalf("dial device plugin at %s: %v", socket, err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

func containerRequests(ids ...[]string) *pluginapi.AllocateRequest {
	request := &pluginapi.AllocateRequest{}
	for _, devices := range ids {
		request.ContainerRequests = append(request.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: devices})
	}
	return request
}

func TestBadAllocateRequestsAreRefused(t *testing.T) {
	n := newNode(t)
	a := n.startAgent(t, n.cfg)
	taken := n.admitOne(t, "holder")
	client := dialPlugin(t, a.pluginSocket)
	free := freeDevice(t, taken.devices)
	tests := []struct {
		name        string
		request     *pluginapi.AllocateRequest
		wantCode    codes.Code
		wantMessage string
	}{
		{name: "no container request", request: containerRequests(),
			wantCode: codes.InvalidArgument, wantMessage: "the request holds no container request"},
		{name: "container request without device", request: containerRequests([]string{}),
			wantCode: codes.InvalidArgument, wantMessage: "holds no device ID"},
		{name: "unknown device IDs", request: containerRequests([]string{"memif-999", "gpu-0"}),
			wantCode: codes.InvalidArgument, wantMessage: "device IDs [memif-999 gpu-0] are not devices of " + resource},
		{name: "device ID twice", request: containerRequests([]string{free, free}),
			wantCode: codes.InvalidArgument, wantMessage: "appear more than once"},
		{name: "more devices than the node has", request: containerRequests(allocation.DeviceIDs(deviceCount + 1)),
			wantCode: codes.InvalidArgument, wantMessage: fmt.Sprintf("asks for %d devices, the node has %d", deviceCount+1, deviceCount)},
		{name: "second container request bad", request: containerRequests([]string{free}, []string{"nope"}),
			wantCode: codes.InvalidArgument, wantMessage: "container request 2 of 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Allocate(n.ctx, tt.request)
			if err == nil {
				t.Fatalf("Allocate succeeded with %v, want %v", resp, tt.wantCode)
			}
			st, _ := status.FromError(err)
			if st.Code() != tt.wantCode || !strings.Contains(st.Message(), tt.wantMessage) {
				t.Errorf("Allocate failed with %v %q, want %v and a message containing %q", st.Code(), st.Message(), tt.wantCode, tt.wantMessage)
			}
		})
	}
	// Nothing of the refused requests stays: the devices and directory the
	// good half of the last request got are released.
	poll.Until(t, waitTimeout, "only the holder's allocation left", func() error {
		entries, err := os.ReadDir(n.cfg.SocketRoot)
		if err != nil {
			return err
		}
		if allocations := a.DeviceManager.ListAllocations(); len(allocations) != 1 || len(entries) != 1 {
			return fmt.Errorf("%d allocations and %d directories in %s, want 1 of each (the holder's)", len(allocations), len(entries), n.cfg.SocketRoot)
		}
		return nil
	})
	if _, err := client.Allocate(n.ctx, containerRequests([]string{free})); err != nil {
		t.Errorf("Allocate of free device %s after the refusals: %v", free, err)
	}
}

func TestAllocateFailsWhenDirectoryCannotBeMade(t *testing.T) {
	n := newNode(t)
	blocker := filepath.Join(filepath.Dir(n.cfg.SocketRoot), "not-a-directory")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := n.cfg
	cfg.SocketRoot = filepath.Join(blocker, "memif")
	a := n.startAgent(t, cfg)
	pod := kubelettest.NewPod("no-dir", resource, 1)
	_, err := n.kubelet.AdmitPod(n.ctx, pod)
	if err == nil || !strings.Contains(err.Error(), "create socket root "+cfg.SocketRoot) {
		t.Fatalf("AdmitPod: %v; want kubelet to reject the pod with our message naming %s", err, cfg.SocketRoot)
	}
	// kubelet flattens the status into its error; the plugin's own answer
	// carries the code.
	_, err = dialPlugin(t, a.pluginSocket).Allocate(n.ctx, containerRequests([]string{"memif-000"}))
	if st, _ := status.FromError(err); st.Code() != codes.Internal || !strings.Contains(st.Message(), "create socket root") {
		t.Errorf("Allocate failed with %v %q, want %v and a message naming the socket root", st.Code(), st.Message(), codes.Internal)
	}
	if allocations := a.DeviceManager.ListAllocations(); len(allocations) != 0 {
		t.Errorf("the agent keeps %d allocations after the failure, want none", len(allocations))
	}
}

// freeDevice returns a device ID that kubelet has not given out.
func freeDevice(t *testing.T, taken []string) string {
	t.Helper()
	for _, id := range allocation.DeviceIDs(deviceCount) {
		if !slices.Contains(taken, id) {
			return id
		}
	}
	t.Fatalf("no free device: all of %d are taken", deviceCount)
	return ""
}
