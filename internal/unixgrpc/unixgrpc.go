// Package unixgrpc makes the agent's gRPC clients of node-local peers
// (kubelet's pod-resources, the CRI runtime) over their Unix sockets, all
// alike: no connection until the first call, so the peer may start later,
// and reconnection within a couple of seconds after the peer restarts
// (gRPC's default backoff grows to two minutes).
//
// It owns no connection: the caller closes what it gets.
package unixgrpc

import (
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

const (
	// maxReconnectDelay bounds the wait between reconnection attempts.
	maxReconnectDelay = 2 * time.Second
	// maxMessageSize matches kubelet's own clients of these APIs.
	maxMessageSize = 16 * 1024 * 1024
)

// NewClient returns a lazy client connection to the Unix socket at path;
// peer names the peer for the error.
func NewClient(peer, path string) (*grpc.ClientConn, error) {
	backoffConfig := backoff.DefaultConfig
	backoffConfig.MaxDelay = maxReconnectDelay
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoffConfig, MinConnectTimeout: time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize)),
	)
	if err != nil {
		return nil, fmt.Errorf("create %s client for socket %s: %w", peer, path, err)
	}
	return conn, nil
}
