package server

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/internal/unixgroup"
	"github.com/contivpp/memif-agent/internal/unixsocket"
)

// Config says where the API is served.
type Config struct {
	// SocketPath is the Unix socket; empty means memifv1.DefaultSocketPath.
	SocketPath string
	// SocketMode is the socket's permission bits; 0 means DefaultSocketMode.
	SocketMode fs.FileMode
	// SocketGroup is the socket's group, by name or numeric ID, for a mode
	// that lets a group in; empty keeps the agent's group.
	SocketGroup string
}

// Server serves a Service on a Unix socket until Close.
type Server struct {
	path     string
	socket   unixsocket.ID // the socket at path as we made it
	grpc     *grpc.Server
	served   chan struct{}
	serveErr error
}

// Start listens on the configured socket and serves service in a goroutine
// that Close stops.
func Start(config Config, service *Service) (*Server, error) {
	path := config.SocketPath
	if path == "" {
		path = memifv1.DefaultSocketPath
	}
	mode := config.SocketMode
	if mode == 0 {
		mode = DefaultSocketMode
	}
	gid, err := unixgroup.Lookup(config.SocketGroup)
	if err != nil {
		return nil, fmt.Errorf("API socket %w", err)
	}
	listener, socket, err := unixsocket.Listen(path, mode, gid)
	if err != nil {
		return nil, fmt.Errorf("API %w", err)
	}
	srv := &Server{path: path, socket: socket, grpc: grpc.NewServer(serverOptions(service)...), served: make(chan struct{})}
	memifv1.RegisterMemifAgentServer(srv.grpc, service)
	go func() {
		defer close(srv.served)
		srv.serveErr = srv.grpc.Serve(listener)
	}()
	return srv, nil
}

// Limits of the gRPC server, so that no client holds the agent's memory:
// a connection serves at most maxStreamsPerConnection calls at once, must
// send its preface within handshakeTimeout, is closed after
// maxConnectionIdle without a call, and is pinged after pingAfter without
// traffic and closed if it does not answer within pingTimeout (a client
// gone without closing, holding a watch). A client may ping at most
// every minPingInterval, and only while it has a call open.
const (
	maxStreamsPerConnection = 16
	handshakeTimeout        = 5 * time.Second
	maxConnectionIdle       = 5 * time.Minute
	pingAfter               = time.Minute
	pingTimeout             = 20 * time.Second
	minPingInterval         = 30 * time.Second
)

func serverOptions(service *Service) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(peerCredentials{peers: service.peers}),
		grpc.MaxConcurrentStreams(maxStreamsPerConnection),
		grpc.ConnectionTimeout(handshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: maxConnectionIdle, Time: pingAfter, Timeout: pingTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPingInterval}),
	}
}

// SocketPath returns the path the server listens on.
func (s *Server) SocketPath() string { return s.path }

// Close stops serving, ends open watch streams and removes the socket.
func (s *Server) Close() error {
	s.grpc.Stop()
	<-s.served
	err := s.serveErr
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	// A replacement agent may already serve at our path: remove only ours.
	if rmErr := unixsocket.RemoveIfSame(s.path, s.socket); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("API %w", rmErr))
	}
	if err != nil {
		return fmt.Errorf("serve node API on %s: %w", s.path, err)
	}
	return nil
}
