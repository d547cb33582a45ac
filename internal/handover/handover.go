package handover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/unixgroup"
	"github.com/contivpp/memif-agent/internal/unixsocket"
)

// socketMode: only the agent's user asks for the node.
const socketMode = 0o600

// DefaultRequestTimeout is how long a connection may take to send its
// request: a successor sends it at once.
const DefaultRequestTimeout = 5 * time.Second

// maxPending bounds the connections read at once; more wait in the
// listen backlog until one is answered or dropped at its RequestTimeout.
const maxPending = 8

// Holder is what the agent holding the node does when a successor asks
// for it. Its methods are called from the server's goroutines, one at a
// time, HandOver first.
type Holder interface {
	// HandOver forwards admissions to the successor whose pod UID is
	// given, finishes what the agent took, stops listening on the node's
	// shared addresses and releases the node lock. An error leaves the
	// agent as it was, holding the node; the successor is told why. The
	// UID is one ValidatePodUID accepts.
	HandOver(ctx context.Context, successorUID string) error
	// SuccessorServing is called once the successor serves kubelet.
	SuccessorServing()
	// SuccessorGone is called when the successor's connection ends before
	// it said it serves, after HandOver succeeded.
	SuccessorGone()
}

// Config bounds what the server waits for.
type Config struct {
	// HandOverTimeout bounds each Holder.HandOver; it is required.
	HandOverTimeout time.Duration
	// RequestTimeout bounds how long a connection may take to send its
	// request; a connection silent for longer is told so and dropped.
	// Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// message is one line of the protocol.
type message struct {
	// From the successor.
	Successor string `json:"successor,omitempty"`
	Serving   bool   `json:"serving,omitempty"`
	// From the holder.
	Released bool   `json:"released,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Server serves the handover socket of the agent holding the node.
type Server struct {
	listener *net.UnixListener
	path     string
	socket   unixsocket.ID
	holder   Holder
	cfg      Config
	log      logs.Logger

	stop    context.CancelFunc
	ctx     context.Context
	served  chan struct{}
	closeMu sync.Mutex
	closed  bool

	// handing lets one request at a time be weighed and handed the node;
	// handedOver, under it, is whether one was.
	handing    sync.Mutex
	handedOver bool
}

// Serve listens at path (replacing a stale socket) and hands the node
// over to the first successor whose HandOver succeeds. Each connection
// is read apart, so that one silent or slow client delays only itself.
// After a successful handover it stops listening: the successor serves
// its own socket at path. Close stops it.
func Serve(path string, holder Holder, cfg Config, log logs.Logger) (*Server, error) {
	if cfg.HandOverTimeout <= 0 {
		return nil, fmt.Errorf("serve handover socket: a handover timeout is required, got %s", cfg.HandOverTimeout)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	listener, socket, err := unixsocket.Listen(path, socketMode, unixgroup.None)
	if err != nil {
		return nil, fmt.Errorf("serve handover socket: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{listener: listener.(*net.UnixListener), path: path, socket: socket, holder: holder, cfg: cfg, log: log,
		ctx: ctx, stop: stop, served: make(chan struct{})}
	go func() {
		defer close(s.served)
		s.run()
	}()
	return s, nil
}

// Close stops serving, ends a handover in progress (a successor that has
// not said it serves is then told nothing more) and the connections not
// answered yet, and removes the socket if it is still this server's.
func (s *Server) Close() error {
	s.closeListener()
	s.stop()
	<-s.served
	return unixsocket.RemoveIfSame(s.path, s.socket)
}

func (s *Server) closeListener() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if !s.closed {
		s.closed = true
		s.listener.Close()
	}
}

// run accepts connections, each answered on a goroutine of its own, until
// the listener is closed (a handover done, or Close), and returns once
// every connection's goroutine has.
func (s *Server) run() {
	var connections sync.WaitGroup
	defer connections.Wait()
	pending := make(chan struct{}, maxPending)
	for {
		select {
		case pending <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		conn, err := s.listener.AcceptUnix()
		if err != nil {
			return
		}
		connections.Go(func() {
			defer func() { <-pending }()
			s.serve(conn)
		})
	}
}

// serve answers one connection.
func (s *Server) serve(conn *net.UnixConn) {
	defer conn.Close()
	stopOnClose := context.AfterFunc(s.ctx, func() { conn.Close() })
	defer stopOnClose()
	reader := bufio.NewReaderSize(conn, maxLine)
	successor, pid, err := s.readRequest(conn, reader)
	if err != nil {
		s.refuse(conn, "handover request refused: this agent keeps the node", err)
		return
	}
	s.handing.Lock()
	defer s.handing.Unlock()
	switch {
	case s.ctx.Err() != nil:
		return
	case s.handedOver:
		s.refuse(conn, "handover request refused: the node is handed over already", errors.New("the node is handed over to another memif-agent already"), "successorPodUID", successor)
		return
	}
	// The request may have waited for another's handover: its sender must
	// still be there to take the node, or no agent would serve it.
	if err := senderPresent(conn, pid); err != nil {
		s.refuse(conn, "stale handover request not honoured: this agent keeps the node", err, "successorPodUID", successor)
		return
	}
	s.log.InfoS("handover asked: a successor memif-agent asks for the node", "successorPodUID", successor, "successorPID", pid)
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.HandOverTimeout)
	err = s.holder.HandOver(ctx, successor)
	cancel()
	if err != nil {
		s.refuse(conn, "handover refused: this agent keeps the node", err, "successorPodUID", successor)
		return
	}
	s.handedOver = true
	// The successor listens at our path from now on.
	s.closeListener()
	if err := writeMessage(conn, message{Released: true}); err != nil {
		s.log.WarnS("handover: telling the successor the node is released failed", "successorPodUID", successor, "err", err)
	}
	var serving message
	if err := readMessage(reader, &serving); err != nil || !serving.Serving {
		if s.ctx.Err() == nil {
			s.holder.SuccessorGone()
		}
		return
	}
	s.log.InfoS("handover done: the successor memif-agent serves the node", "successorPodUID", successor)
	s.holder.SuccessorServing()
}

// readRequest reads the successor's request within the RequestTimeout and
// returns the pod UID it names and its sender's process ID (0 when that
// process is in a PID namespace this one does not see).
func (s *Server) readRequest(conn *net.UnixConn, reader *bufio.Reader) (successor string, pid int32, err error) {
	peer, err := peerCredentials(conn)
	if err != nil {
		return "", 0, err
	}
	if err := conn.SetReadDeadline(time.Now().Add(s.cfg.RequestTimeout)); err != nil {
		return "", 0, fmt.Errorf("read the handover request: %w", err)
	}
	var request message
	if err := readMessage(reader, &request); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return "", 0, fmt.Errorf("no handover request within %s of connecting (process %d): send it at once", s.cfg.RequestTimeout, peer.Pid)
		}
		return "", 0, fmt.Errorf("read the handover request (process %d): %w", peer.Pid, err)
	}
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		return "", 0, fmt.Errorf("read the handover request: %w", err)
	}
	if err := ValidatePodUID(request.Successor); err != nil {
		return "", 0, fmt.Errorf("handover request of process %d: successor: %w", peer.Pid, err)
	}
	return request.Successor, peer.Pid, nil
}

// refuse logs why conn is not handed the node and tells it, if it still
// listens, within the RequestTimeout.
func (s *Server) refuse(conn *net.UnixConn, what string, err error, keysAndValues ...any) {
	s.log.WarnS(what, append(keysAndValues, "err", err)...)
	if conn.SetWriteDeadline(time.Now().Add(s.cfg.RequestTimeout)) == nil {
		_ = writeMessage(conn, message{Error: err.Error()})
	}
}

// Granted is the successor's side of a handover the holder granted.
type Granted struct {
	conn net.Conn
}

// ErrNoHolder is Request's error when nobody serves the handover socket:
// the holder is an agent without handover, or is exiting.
var ErrNoHolder = errors.New("no memif-agent serves the handover socket")

// Request asks the agent serving path for the node on behalf of the pod
// successorUID and waits, within ctx, until it released it. Keep the
// Granted until this agent serves (Serving) or gives up (Close).
func Request(ctx context.Context, path, successorUID string) (*Granted, error) {
	if err := ValidatePodUID(successorUID); err != nil {
		return nil, fmt.Errorf("ask for the node at %s: %w", path, err)
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %w", ErrNoHolder, path, err)
	}
	stopOnDone := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopOnDone()
	if err := writeMessage(conn, message{Successor: successorUID}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ask for the node at %s: %w", path, err)
	}
	var answer message
	if err := readMessage(bufio.NewReaderSize(conn, maxLine), &answer); err != nil {
		conn.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("wait for the node at %s: %w", path, err)
	}
	if !answer.Released {
		conn.Close()
		return nil, fmt.Errorf("the memif-agent at %s keeps the node: %s", path, answer.Error)
	}
	return &Granted{conn: conn}, nil
}

// Serving tells the previous holder that this agent serves kubelet, and
// ends the handover.
func (g *Granted) Serving() error {
	err := writeMessage(g.conn, message{Serving: true})
	return errors.Join(err, g.conn.Close())
}

// Close ends the handover without serving: the previous holder stops.
func (g *Granted) Close() error { return g.conn.Close() }

func writeMessage(conn net.Conn, m message) error {
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = conn.Write(append(line, '\n'))
	return err
}

// maxLine bounds a message: a UID, a flag or an error.
const maxLine = 4096

func readMessage(reader *bufio.Reader, m *message) error {
	line, err := reader.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("handover message longer than %d bytes", maxLine)
		}
		return err
	}
	return json.Unmarshal(line, m)
}
