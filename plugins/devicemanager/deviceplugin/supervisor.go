package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/internal/unixsocket"
)

// connectBackoff paces reconnections to kubelet's registration socket
// within one Register call.
var connectBackoff = backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

// supervisor owns the gRPC server, the registration and the directory
// watch; only its run goroutine touches them.
//
// It does not act on what an event says but on what the directory holds
// when it looks (reconcile): events may be stale or arrive in any order
// relative to the retry timer. A registration is for one pair of sockets,
// kubelet's and ours (registration); it is made once per pair, in its own
// goroutine, and cancelled as soon as the pair it was made for is gone.
// kubelet's Register handler dials our socket back and blocks until it can
// connect: a registration left running while kubelet's startup cleanup
// removed our socket would block both sides until the register timeout.
type supervisor struct {
	s          *Server
	watcher    *fsnotify.Watcher
	grpcServer *grpc.Server
	serveErr   <-chan error
	served     unixsocket.ID // our socket as our server created it
	serving    uint64        // counts serve calls: names our server in a registration

	registered registration // the pair of the last successful registration
	inFlight   *attempt     // nil when no registration runs
	results    chan attemptResult
	attempts   sync.WaitGroup

	registrations int
	backoff       time.Duration
	retry         *time.Timer

	// current is our server as kubelet's streams see it; nil when not
	// serving. A send on follows tells the run goroutine that kubelet
	// opened ListAndWatch on a server.
	current *followedServer
	follows chan struct{}
}

// registration is what a Register call is for: the kubelet socket it is
// sent to and our server (its serve count) that kubelet dials back.
type registration struct {
	kubelet unixsocket.ID
	serving uint64
}

type attempt struct {
	registration registration
	cancel       context.CancelFunc
}

type attemptResult struct {
	attempt *attempt
	err     error
}

func newSupervisor(s *Server) (*supervisor, error) {
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("create device plugin directory watcher: %w", err)
	}
	sup := &supervisor{s: s, watcher: watcher, retry: time.NewTimer(0), results: make(chan attemptResult), follows: make(chan struct{}, 1)}
	if err := s.watchDir(watcher); err != nil {
		watcher.Close()
		return nil, err
	}
	if err := sup.serve(); err != nil {
		watcher.Close()
		return nil, err
	}
	return sup, nil
}

func (sup *supervisor) run(ctx context.Context) {
	defer sup.shutdown()
	for {
		select {
		case <-ctx.Done():
			return
		case event, ok := <-sup.watcher.Events:
			if !ok {
				return
			}
			if sup.handleFileEvent(event) {
				sup.reconcile(ctx, false)
			}
		case err, ok := <-sup.watcher.Errors:
			if ok {
				sup.s.log.WarnS("device plugin directory watch error (registration still retries)", "err", err)
			}
		case err := <-sup.serveErr:
			sup.s.log.WarnS("device plugin server stopped: serving again", "socket", sup.s.SocketPath(), "err", err)
			sup.stopServing()
			sup.reconcile(ctx, false)
		case result := <-sup.results:
			sup.finished(ctx, result)
		case <-sup.follows:
			sup.reconcile(ctx, false)
		case <-sup.retry.C:
			sup.reconcile(ctx, true)
		}
	}
}

// handleFileEvent tells whether the event is about one of the two sockets
// or the directory itself: other files (kubelet's checkpoint, rewritten on
// every allocation) are none of ours.
func (sup *supervisor) handleFileEvent(event fsnotify.Event) bool {
	name := filepath.Clean(event.Name)
	switch {
	case name == sup.s.kubeletSocketPath():
		if event.Has(fsnotify.Create) {
			sup.s.log.InfoS("kubelet socket created", "socket", event.Name)
		}
	case name == sup.s.SocketPath():
		if event.Has(fsnotify.Remove) || event.Has(fsnotify.Rename) {
			sup.s.log.InfoS("device plugin socket removed", "socket", event.Name)
		}
	case name == filepath.Clean(sup.s.cfg.PluginDir):
		if event.Has(fsnotify.Remove) || event.Has(fsnotify.Rename) {
			sup.s.log.WarnS("device plugin directory removed: recreating it", "dir", sup.s.cfg.PluginDir)
			if err := sup.s.watchDir(sup.watcher); err != nil {
				sup.s.log.ErrorS(err, "device plugin directory not watched again", "dir", sup.s.cfg.PluginDir)
			}
		}
	default:
		return false
	}
	return true
}

// reconcile serves again if our socket is not the one our server listens
// on, and registers the current pair of sockets unless that is done or
// under way, or kubelet follows our new server. An attempt for another
// pair is cancelled: its sockets are gone. Only the retry timer's own
// retries back off further: one kubelet restart brings a burst of events,
// which must not push the next retry seconds out.
func (sup *supervisor) reconcile(ctx context.Context, retrying bool) {
	notYet := sup.retryLater
	if retrying {
		notYet = sup.failed
	}
	serving, err := sup.ensureServing()
	if err != nil {
		sup.cancelAttempt()
		notYet(err)
		return
	}
	kubelet, err := unixsocket.Stat(sup.s.kubeletSocketPath())
	if err != nil {
		// The creation of kubelet's socket triggers the next attempt; the
		// retry timer covers a watch that missed it.
		sup.cancelAttempt()
		notYet(fmt.Errorf("kubelet registration socket: %w", err))
		return
	}
	want := registration{kubelet: kubelet, serving: serving}
	switch {
	case want == sup.registered:
		sup.cancelAttempt() // for an older pair, if any
		sup.retry.Stop()
	case sup.registered.serving != serving && sup.current.following():
		// kubelet holds our endpoint for this server: that is its answer,
		// whether or not the Register call's own came (the call ran out
		// of time, or was cancelled after kubelet took it). Registering
		// again would make kubelet refuse the call as already connected
		// and forget the endpoint it holds, which blocks every later
		// registration on our socket path until kubelet restarts.
		sup.cancelAttempt()
		sup.retry.Stop()
		sup.s.log.DebugS("kubelet follows our device list: registered")
		sup.succeeded(want)
	case sup.inFlight != nil && sup.inFlight.registration == want:
	default:
		sup.cancelAttempt()
		sup.startAttempt(ctx, want)
	}
}

// ensureServing serves afresh if the file at our path is missing or not the
// socket our server listens on, and returns the serve count of the server.
func (sup *supervisor) ensureServing() (uint64, error) {
	if sup.grpcServer != nil {
		current, err := unixsocket.Stat(sup.s.SocketPath())
		if err == nil && current == sup.served {
			return sup.serving, nil
		}
		sup.s.log.InfoS("device plugin socket is gone (kubelet restarted): serving again", "socket", sup.s.SocketPath())
		// The call in flight asked kubelet to dial the socket that is
		// gone: cancel it before the new socket exists, or kubelet may
		// dial that one and complete a registration we abandon.
		sup.cancelAttempt()
		sup.stopServing()
	}
	if err := sup.serve(); err != nil {
		return 0, fmt.Errorf("serve before registering: %w", err)
	}
	return sup.serving, nil
}

func (sup *supervisor) serve() error {
	// Each server gets its own count, served or not: a registration
	// names the server it is for.
	sup.serving++
	current := &followedServer{Server: sup.s, follows: sup.follows}
	server, serveErr, err := sup.s.listen(current)
	if err != nil {
		return err
	}
	served, err := unixsocket.Stat(sup.s.SocketPath())
	if err != nil {
		server.Stop()
		return fmt.Errorf("device plugin socket vanished as it was served: %w", err)
	}
	sup.grpcServer, sup.serveErr, sup.served, sup.current = server, serveErr, served, current
	return nil
}

func (sup *supervisor) stopServing() {
	if sup.grpcServer != nil {
		// Stop ends every stream: ListAndWatch of the old kubelet returns.
		sup.grpcServer.Stop()
		sup.grpcServer, sup.serveErr, sup.served, sup.current = nil, nil, unixsocket.ID{}, nil
	}
}

func (sup *supervisor) startAttempt(ctx context.Context, want registration) {
	sup.retry.Stop()
	ctx, cancel := context.WithCancel(ctx)
	a := &attempt{registration: want, cancel: cancel}
	sup.inFlight = a
	sup.attempts.Add(1)
	go func() {
		defer sup.attempts.Done()
		err := sup.s.registerWithKubelet(ctx, want.kubelet)
		select {
		case sup.results <- attemptResult{attempt: a, err: err}:
		case <-ctx.Done():
		}
	}()
}

// cancelAttempt cancels the registration under way, if any; its result is
// then dropped.
func (sup *supervisor) cancelAttempt() {
	if sup.inFlight != nil {
		sup.s.log.DebugS("cancelling the registration in flight: its sockets were replaced")
		sup.inFlight.cancel()
		sup.inFlight = nil
	}
}

func (sup *supervisor) finished(ctx context.Context, result attemptResult) {
	if result.attempt != sup.inFlight {
		return // cancelled: a newer attempt or state replaced it
	}
	result.attempt.cancel()
	sup.inFlight = nil
	switch {
	case errors.Is(result.err, unixsocket.ErrReplaced):
		// Not kubelet's failure: register with the socket there now.
		sup.reconcile(ctx, false)
	case result.err != nil:
		sup.failed(result.err)
	default:
		sup.succeeded(result.attempt.registration)
	}
}

// followedServer is the device plugin as one server serves it: it counts
// the ListAndWatch streams kubelet holds open on that server and tells the
// supervisor when one opens.
type followedServer struct {
	*Server
	follows chan<- struct{}
	open    atomic.Int32
}

func (f *followedServer) ListAndWatch(empty *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	f.open.Add(1)
	defer f.open.Add(-1)
	select {
	case f.follows <- struct{}{}:
	default: // the run goroutine has yet to look: it will count this stream
	}
	return f.Server.ListAndWatch(empty, stream)
}

// following tells whether kubelet holds a ListAndWatch stream open on the
// server; false for no server. kubelet opens one only once it holds our
// endpoint, and one kubelet at a time serves a node.
func (f *followedServer) following() bool { return f != nil && f.open.Load() > 0 }

func (sup *supervisor) succeeded(done registration) {
	sup.registered = done
	again := sup.registrations > 0
	sup.registrations++
	sup.backoff = 0
	sup.s.log.InfoS("device plugin registered with kubelet", "resource", sup.s.cfg.ResourceName, "devices", len(sup.s.cfg.Devices), "kubeletSocket", sup.s.kubeletSocketPath())
	sup.s.observer.Registered(again)
}

// retryLater arms the retry timer without backing off further.
func (sup *supervisor) retryLater(err error) {
	sup.s.log.DebugS("device plugin not registered yet: looking again unless the directory changes first", "in", max(sup.backoff, sup.s.cfg.MinBackoff), "err", err)
	sup.retry.Reset(max(sup.backoff, sup.s.cfg.MinBackoff))
}

func (sup *supervisor) failed(err error) {
	sup.backoff = min(max(sup.backoff*2, sup.s.cfg.MinBackoff), sup.s.cfg.MaxBackoff)
	sup.s.log.DebugS("device plugin registration failed: retrying", "in", sup.backoff, "err", err)
	sup.s.observer.RegistrationFailed(err)
	sup.retry.Reset(sup.backoff)
}

func (sup *supervisor) shutdown() {
	sup.retry.Stop()
	sup.cancelAttempt()
	sup.attempts.Wait()
	// A replacement agent may already serve at our path: remove only ours.
	served := sup.served
	sup.stopServing()
	sup.watcher.Close()
	if err := unixsocket.RemoveIfSame(sup.s.SocketPath(), served); err != nil {
		sup.s.log.WarnS("device plugin socket not removed", "err", err)
	}
}

// registerWithKubelet makes one Register call to the kubelet socket
// incarnation kubelet. It waits for that socket to accept (kubelet binds it
// before it listens: a connection in between is refused), retrying the
// connection every few milliseconds rather than gRPC's default second,
// until the call's context ends. It never reaches a newer kubelet socket
// at the same path: a restarted kubelet whose socket replaced the one the
// call was for gets its own call, and two calls would make kubelet refuse
// the second as "already connected" and forget our endpoint (see doc.go).
func (s *Server) registerWithKubelet(ctx context.Context, kubelet unixsocket.ID) error {
	path := s.kubeletSocketPath()
	ctx, replaced := context.WithCancelCause(ctx)
	defer replaced(nil)
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		conn, err := unixsocket.Dial(ctx, path, kubelet)
		if errors.Is(err, unixsocket.ErrReplaced) {
			replaced(err) // no retry can reach it again
		}
		return conn, err
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: connectBackoff, MinConnectTimeout: s.cfg.RegisterTimeout}))
	if err != nil {
		return fmt.Errorf("connect to kubelet registration socket %s: %w", path, err)
	}
	defer conn.Close()
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.RegisterTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(callCtx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     s.cfg.PluginSocket,
		ResourceName: s.cfg.ResourceName,
		Options:      pluginOptions(),
	}, grpc.WaitForReady(true))
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); errors.Is(cause, unixsocket.ErrReplaced) {
		return fmt.Errorf("register %s with kubelet: %w", s.cfg.ResourceName, cause)
	}
	if strings.Contains(status.Convert(err).Message(), alreadyConnected) {
		return fmt.Errorf("register %s with kubelet at %s: %w (kubelet keeps an endpoint for %s from an earlier registration and refuses every new one for that socket until it restarts: restart kubelet)",
			s.cfg.ResourceName, path, err, s.SocketPath())
	}
	return fmt.Errorf("register %s with kubelet at %s: %w", s.cfg.ResourceName, path, err)
}

// alreadyConnected is how kubelet's device manager refuses a registration
// for a socket path it holds an endpoint for.
const alreadyConnected = "device plugin already connected"
