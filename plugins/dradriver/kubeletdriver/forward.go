package kubeletdriver

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/types"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
)

// forwarding sends kubelet's prepare and unprepare calls to the DRA
// driver of the agent that replaces this one (internal/handover), once
// HandOver named it. kubelet sends them to the driver it registered last,
// but it may still call this one: until the successor registered, or
// after a kubelet restart registered both in any order. Calls this driver
// answers itself hold inUse for reading, so that HandOver returns only
// after they are answered.
type forwarding struct {
	inUse sync.RWMutex
	// successor is the successor's DRA socket; empty: answer here.
	successor string
	dialOnce  sync.Once
	conn      *grpc.ClientConn
	connErr   error
}

// forwardedResponses makes an empty response for each call forwarded.
var forwardedResponses = map[string]func() any{
	drapbv1.DRAPlugin_NodePrepareResources_FullMethodName:        func() any { return new(drapbv1.NodePrepareResourcesResponse) },
	drapbv1.DRAPlugin_NodeUnprepareResources_FullMethodName:      func() any { return new(drapbv1.NodeUnprepareResourcesResponse) },
	drapbv1beta1.DRAPlugin_NodePrepareResources_FullMethodName:   func() any { return new(drapbv1beta1.NodePrepareResourcesResponse) },
	drapbv1beta1.DRAPlugin_NodeUnprepareResources_FullMethodName: func() any { return new(drapbv1beta1.NodeUnprepareResourcesResponse) },
}

// PluginSocketFor is the DRA socket of the driver in the pod podUID, as
// kubeletplugin names it with RollingUpdate.
func (d *Driver) PluginSocketFor(podUID types.UID) string {
	return filepath.Join(d.cfg.PluginDataDir, "dra-"+string(podUID)+".sock")
}

// HandOver makes the driver forward kubelet's prepare and unprepare calls
// to the driver of the pod successorUID from now on, waiting for it to
// serve, and returns once the calls it was answering itself are answered.
// It does nothing unless the driver runs for rolling updates (PodUID).
func (d *Driver) HandOver(successorUID types.UID) {
	if d.cfg.PodUID == "" {
		return
	}
	d.forward.inUse.Lock()
	d.forward.successor = d.PluginSocketFor(successorUID)
	d.forward.inUse.Unlock()
	d.log.InfoS("DRA driver forwards kubelet's prepare and unprepare calls to the replacing agent from now on", "driver", d.cfg.DriverName, "successorSocket", d.forward.successor)
}

// forwardCalls is the gRPC interceptor that forwards kubelet's prepare
// and unprepare calls after HandOver.
func (d *Driver) forwardCalls(ctx context.Context, request any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	newResponse, forwardable := forwardedResponses[info.FullMethod]
	if !forwardable {
		return handler(ctx, request)
	}
	d.forward.inUse.RLock()
	if d.forward.successor == "" {
		defer d.forward.inUse.RUnlock()
		return handler(ctx, request)
	}
	d.forward.inUse.RUnlock()
	conn, err := d.forward.successorConn()
	if err != nil {
		return nil, fmt.Errorf("forward %s to the replacing agent's DRA driver %s: %w", info.FullMethod, d.forward.successor, err)
	}
	response := newResponse()
	if err := conn.Invoke(ctx, info.FullMethod, request, response, grpc.WaitForReady(true)); err != nil {
		return nil, err
	}
	return response, nil
}

// successorConn returns the connection to the successor; the first call
// makes it.
func (f *forwarding) successorConn() (*grpc.ClientConn, error) {
	f.dialOnce.Do(func() {
		f.conn, f.connErr = grpc.NewClient("unix://"+f.successor, grpc.WithTransportCredentials(insecure.NewCredentials()))
	})
	return f.conn, f.connErr
}

// close closes the connection to the successor, if one was made.
func (f *forwarding) close() {
	if f.conn != nil {
		f.conn.Close()
	}
}
