package deviceplugin

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// forwarding sends kubelet's Allocate calls to the device plugin of the
// agent that replaces this one (internal/handover), once HandOver named
// it. Calls this server answers itself hold inUse for reading, so that
// HandOver returns only after they have all been answered.
type forwarding struct {
	inUse sync.RWMutex
	// successor is the successor's socket path; empty: answer here.
	successor string
	conn      *grpc.ClientConn
	connErr   error
	dialOnce  sync.Once
}

// HandOver makes the server forward every Allocate from now on to the
// device plugin serving successorSocket, waiting for it to serve, and
// returns once the Allocate calls the server was answering itself are
// answered. ListAndWatch goes on until Stop.
func (s *Server) HandOver(successorSocket string) {
	s.forward.inUse.Lock()
	s.forward.successor = successorSocket
	s.forward.inUse.Unlock()
	s.log.InfoS("device plugin forwards kubelet's Allocate calls to the replacing agent from now on", "successorSocket", successorSocket)
}

// successorConn returns the connection to the successor; the first call
// makes it.
func (f *forwarding) successorConn() (*grpc.ClientConn, error) {
	f.dialOnce.Do(func() {
		f.conn, f.connErr = grpc.NewClient("unix://"+f.successor, grpc.WithTransportCredentials(insecure.NewCredentials()))
	})
	return f.conn, f.connErr
}

// forwardAllocate answers request through the successor's device plugin,
// waiting within ctx (kubelet's call) until it serves.
func (s *Server) forwardAllocate(ctx context.Context, request *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	conn, err := s.forward.successorConn()
	if err != nil {
		return nil, fmt.Errorf("forward Allocate to the replacing agent's device plugin %s: %w", s.forward.successor, err)
	}
	return pluginapi.NewDevicePluginClient(conn).Allocate(ctx, request, grpc.WaitForReady(true))
}

// close closes the connection to the successor, if one was made.
func (f *forwarding) close() {
	if f.conn != nil {
		f.conn.Close()
	}
}
