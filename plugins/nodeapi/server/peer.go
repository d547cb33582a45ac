package server

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// peerCredentials is the server's transport credentials: no security of
// its own (the socket's mode decides who connects), but every connection
// gets its client's user ID from the kernel (SO_PEERCRED) and is counted
// in peers, which bounds the connections and watchers of each user.
type peerCredentials struct {
	peers *peers
}

// peerConn is a client's connection as the server holds it.
type peerConn struct {
	net.Conn
	uid   uint32
	peers *peers
	// closed is set once the connection is closed; guarded by peers.mu.
	closed bool

	closeOnce sync.Once
}

// Close closes the connection and counts it out of peers, once.
func (c *peerConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.peers.disconnect(c) })
	return err
}

// peerInfo is a stream's credentials.AuthInfo: its connection.
type peerInfo struct {
	credentials.CommonAuthInfo
	conn *peerConn
}

func (peerInfo) AuthType() string { return "peercred" }

// ServerHandshake implements credentials.TransportCredentials.
func (p peerCredentials) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	uid, err := peerUID(raw)
	if err != nil {
		return nil, nil, err
	}
	conn := &peerConn{Conn: raw, uid: uid, peers: p.peers}
	if err := p.peers.connect(conn); err != nil {
		return nil, nil, err
	}
	return conn, peerInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, conn: conn}, nil
}

// ClientHandshake implements credentials.TransportCredentials; the server
// makes no connection.
func (peerCredentials) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, fmt.Errorf("peer credentials are the node API server's only")
}

// Info implements credentials.TransportCredentials.
func (peerCredentials) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "peercred"}
}

// Clone implements credentials.TransportCredentials.
func (p peerCredentials) Clone() credentials.TransportCredentials { return p }

// OverrideServerName implements credentials.TransportCredentials.
func (peerCredentials) OverrideServerName(string) error { return nil }

// peerUID is the user ID of the process at the other end of a Unix
// socket connection.
func peerUID(conn net.Conn) (uint32, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("node API connection %T is not a socket", conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("node API connection: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return 0, fmt.Errorf("node API connection: %w", err)
	}
	if credErr != nil {
		return 0, fmt.Errorf("node API connection: the client's credentials (SO_PEERCRED): %w", credErr)
	}
	return cred.Uid, nil
}

// connOf is the connection a stream came on, nil if the server did not
// make it (peerCredentials).
func connOf(ctx context.Context) *peerConn {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(peerInfo)
	if !ok {
		return nil
	}
	return info.conn
}
