package probesocket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/contivpp/memif-agent/internal/connlimit"
	"github.com/contivpp/memif-agent/internal/unixsocket"
)

// DefaultPath is where the agent serves its probes unless health.conf
// says otherwise: in a directory of its own, which the DaemonSet mounts
// from the pod (an emptyDir), not from the host, so that a new agent's
// probes reach that agent, not the one it replaces.
const DefaultPath = "/var/run/memif-agent-probe/probe.sock"

// Paths of the probes, on the socket and on the agent's HTTP server.
const (
	ReadinessPath = "/readiness"
	LivenessPath  = "/liveness"
)

// Mode lets only the socket's owner, the agent's user, connect.
const Mode = fs.FileMode(0o600)

// Limits of the probe server. kubelet runs one probe of each kind at a
// time, and each answers in milliseconds.
const (
	maxConnections    = 8
	readHeaderTimeout = 2 * time.Second
	writeTimeout      = 5 * time.Second
	idleTimeout       = 5 * time.Second
	maxHeaderBytes    = 4 << 10
	// maxAnswerBytes bounds what Ask reads of an answer.
	maxAnswerBytes = 64 << 10
)

// Server serves the probes on the socket until Close.
type Server struct {
	path     string
	socket   unixsocket.ID
	http     *http.Server
	served   chan struct{}
	serveErr error
}

// Serve listens on a socket at path (mode Mode; a missing directory is
// created for the owner only) and serves handler there.
func Serve(path string, handler http.Handler) (*Server, error) {
	listener, socket, err := unixsocket.Listen(path, Mode, -1)
	if err != nil {
		return nil, fmt.Errorf("probe %w", err)
	}
	s := &Server{
		path:   path,
		socket: socket,
		http: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readHeaderTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
		},
		served: make(chan struct{}),
	}
	bounded := connlimit.Bound(s.http, listener, maxConnections)
	go func() {
		defer close(s.served)
		s.serveErr = s.http.Serve(bounded)
	}()
	return s, nil
}

// Path is the socket the probes are served on.
func (s *Server) Path() string { return s.path }

// Close stops serving and removes the socket, if it is still this
// server's.
func (s *Server) Close() error {
	err := s.http.Close()
	<-s.served
	if !errors.Is(s.serveErr, http.ErrServerClosed) {
		err = errors.Join(err, s.serveErr)
	}
	if rmErr := unixsocket.RemoveIfSame(s.path, s.socket); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("probe %w", rmErr))
	}
	if err != nil {
		return fmt.Errorf("serve probes on %s: %w", s.path, err)
	}
	return nil
}

// Answer is what a probe answered.
type Answer struct {
	// Code is the HTTP status: 200 passes the probe.
	Code int
	// Body is the agent's state as JSON, cut at 64 KiB.
	Body []byte
}

// Passed tells whether the probe passed.
func (a Answer) Passed() bool { return a.Code == http.StatusOK }

// Ask asks the probe at urlPath (such as /liveness) of the agent serving
// on the socket at path; ctx bounds the whole exchange.
func Ask(ctx context.Context, path, urlPath string) (Answer, error) {
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dialer net.Dialer
			return dialer.DialContext(ctx, "unix", path)
		},
		DisableKeepAlives: true,
	}
	defer transport.CloseIdleConnections()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://memif-agent"+urlPath, nil)
	if err != nil {
		return Answer{}, fmt.Errorf("probe %s: %w", urlPath, err)
	}
	response, err := (&http.Client{Transport: transport}).Do(request)
	if err != nil {
		return Answer{}, explainAskError(path, urlPath, err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(io.LimitReader(response.Body, maxAnswerBytes))
	if err != nil {
		return Answer{}, fmt.Errorf("probe %s on %s: read the answer: %w", urlPath, path, err)
	}
	return Answer{Code: response.StatusCode, Body: body}, nil
}

// explainAskError says what a failed connection to the socket means.
func explainAskError(path, urlPath string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("probe %s: no socket at %s: is memif-agent running, and is it health.conf's probe-socket? %w", urlPath, path, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("probe %s: nothing listens on the socket %s: memif-agent has stopped: %w", urlPath, path, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("probe %s: the socket %s lets only its owner (root) connect: run the probe as root: %w", urlPath, path, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("probe %s on %s: no answer in time: %w", urlPath, path, err)
	}
	return fmt.Errorf("probe %s on %s: %w", urlPath, path, err)
}
