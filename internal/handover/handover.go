package handover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/unixgroup"
	"github.com/contivpp/memif-agent/internal/unixsocket"
)

// socketMode: only the agent's user asks for the node.
const socketMode = 0o600

// Holder is what the agent holding the node does when a successor asks
// for it. Its methods are called from the server's goroutine, one at a
// time, HandOver first.
type Holder interface {
	// HandOver forwards admissions to the successor whose pod UID is
	// given, finishes what the agent took, stops listening on the node's
	// shared addresses and releases the node lock. An error leaves the
	// agent as it was, holding the node; the successor is told why.
	HandOver(ctx context.Context, successorUID string) error
	// SuccessorServing is called once the successor serves kubelet.
	SuccessorServing()
	// SuccessorGone is called when the successor's connection ends before
	// it said it serves, after HandOver succeeded.
	SuccessorGone()
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
	listener net.Listener
	path     string
	socket   unixsocket.ID
	holder   Holder
	timeout  time.Duration
	log      logs.Logger

	stop    context.CancelFunc
	ctx     context.Context
	served  chan struct{}
	closeMu sync.Mutex
	closed  bool
}

// Serve listens at path (replacing a stale socket) and hands the node
// over to the first successor whose HandOver succeeds, each HandOver
// bounded by timeout. After a successful handover it stops listening: the
// successor serves its own socket at path. Close stops it.
func Serve(path string, holder Holder, timeout time.Duration, log logs.Logger) (*Server, error) {
	listener, socket, err := unixsocket.Listen(path, socketMode, unixgroup.None)
	if err != nil {
		return nil, fmt.Errorf("serve handover socket: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{listener: listener, path: path, socket: socket, holder: holder, timeout: timeout, log: log,
		ctx: ctx, stop: stop, served: make(chan struct{})}
	go func() {
		defer close(s.served)
		s.run()
	}()
	return s, nil
}

// Close stops serving, ends a handover in progress (a successor that has
// not said it serves is then told nothing more) and removes the socket if
// it is still this server's.
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

// run answers successors one at a time until one is handed the node.
func (s *Server) run() {
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		if s.serve(conn) {
			return
		}
	}
}

// serve answers one successor; it returns true once the node is handed
// over, whatever the successor did next.
func (s *Server) serve(conn net.Conn) bool {
	defer conn.Close()
	stopOnClose := context.AfterFunc(s.ctx, func() { conn.Close() })
	defer stopOnClose()
	reader := bufio.NewReaderSize(conn, maxLine)
	var request message
	if err := readMessage(reader, &request); err != nil || request.Successor == "" {
		s.log.WarnS("handover request names no successor", "err", err)
		return false
	}
	s.log.InfoS("handover asked: a successor memif-agent asks for the node", "successorPodUID", request.Successor)
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	err := s.holder.HandOver(ctx, request.Successor)
	cancel()
	if err != nil {
		s.log.WarnS("handover refused: this agent keeps the node", "successorPodUID", request.Successor, "err", err)
		_ = writeMessage(conn, message{Error: err.Error()})
		return false
	}
	// The successor listens at our path from now on.
	s.closeListener()
	if err := writeMessage(conn, message{Released: true}); err != nil {
		s.log.WarnS("handover: telling the successor the node is released failed", "successorPodUID", request.Successor, "err", err)
	}
	var serving message
	if err := readMessage(reader, &serving); err != nil || !serving.Serving {
		if s.ctx.Err() == nil {
			s.holder.SuccessorGone()
		}
		return true
	}
	s.log.InfoS("handover done: the successor memif-agent serves the node", "successorPodUID", request.Successor)
	s.holder.SuccessorServing()
	return true
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
