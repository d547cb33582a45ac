package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/internal/logs"
)

// Config says where the server lives and what it advertises.
type Config struct {
	// ResourceName is the extended resource registered with kubelet.
	ResourceName string
	// PluginDir is kubelet's device-plugin directory.
	PluginDir string
	// PluginSocket and KubeletSocket are file names in PluginDir.
	PluginSocket  string
	KubeletSocket string
	// Devices are the device IDs advertised.
	Devices []string
	// Health says whether the devices are healthy, and returns a channel
	// closed at the next change; nil: healthy for ever.
	Health func() (healthy bool, changed <-chan struct{})
	// RegisterTimeout bounds one Register call; default 5s.
	RegisterTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between failed
	// registrations; defaults 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// Interceptor, when set, wraps each of kubelet's calls (Allocate and
	// the others), to time or trace them as kubelet makes them.
	Interceptor grpc.UnaryServerInterceptor
}

// Server is the device plugin. Create it with New.
type Server struct {
	pluginapi.UnimplementedDevicePluginServer

	cfg       Config
	allocator Allocator
	log       logs.Logger
	observer  Observer

	runMu   sync.Mutex // guards cancel and done against Start/Stop races
	cancel  context.CancelFunc
	done    chan struct{}
	stopped chan struct{} // closed by Stop: ListAndWatch streams return

	// forward sends Allocate to the replacing agent after HandOver.
	forward forwarding
}

// New checks cfg and returns a server that has not started; kubelet's
// Allocate calls go to allocator. observer may be nil.
func New(cfg Config, allocator Allocator, log logs.Logger, observer Observer) (*Server, error) {
	switch {
	case allocator == nil:
		return nil, errors.New("create device plugin server: no allocator given")
	case log == nil:
		return nil, errors.New("create device plugin server: no logger given")
	case cfg.ResourceName == "" || cfg.PluginDir == "" || cfg.PluginSocket == "" || cfg.KubeletSocket == "":
		return nil, fmt.Errorf("create device plugin server: resource name, plugin dir and socket names are required, got %+v", cfg)
	}
	cfg.Devices = slices.Clone(cfg.Devices)
	cfg.RegisterTimeout = cmp(cfg.RegisterTimeout, 5*time.Second)
	cfg.MinBackoff = cmp(cfg.MinBackoff, 100*time.Millisecond)
	cfg.MaxBackoff = max(cmp(cfg.MaxBackoff, 5*time.Second), cfg.MinBackoff)
	if observer == nil {
		observer = ignored{}
	}
	return &Server{cfg: cfg, allocator: allocator, log: log, observer: observer, stopped: make(chan struct{})}, nil
}

func cmp(value, fallback time.Duration) time.Duration {
	if value <= 0 {
		return fallback
	}
	return value
}

// SocketPath is the full path of the plugin's socket.
func (s *Server) SocketPath() string { return filepath.Join(s.cfg.PluginDir, s.cfg.PluginSocket) }

func (s *Server) kubeletSocketPath() string {
	return filepath.Join(s.cfg.PluginDir, s.cfg.KubeletSocket)
}

// Start prepares the directory and its watch and serves, then runs
// registration and the watch in a goroutine until Stop. Registration
// failures are retried, not returned: the agent stays up without kubelet.
func (s *Server) Start() error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.done != nil {
		return errors.New("start device plugin server: already started")
	}
	sup, err := newSupervisor(s)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		sup.run(ctx)
	}()
	return nil
}

// Stop ends serving and registration, waits for them and removes the socket.
func (s *Server) Stop() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.done == nil {
		return
	}
	select {
	case <-s.stopped:
		return
	default:
	}
	close(s.stopped)
	s.cancel()
	<-s.done
	s.forward.close()
}

// listen serves a fresh gRPC server on the plugin socket. The listener does
// not unlink on close: the path may already be another server's socket.
func (s *Server) listen(plugin pluginapi.DevicePluginServer) (*grpc.Server, <-chan error, error) {
	path := s.SocketPath()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("remove stale device plugin socket %s: %w", path, err)
	}
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on device plugin socket %s: %w", path, err)
	}
	listener.(*net.UnixListener).SetUnlinkOnClose(false)
	// Only kubelet, which runs as root, connects.
	if err := os.Chmod(path, 0o600); err != nil {
		listener.Close()
		return nil, nil, fmt.Errorf("restrict device plugin socket %s to mode 0600: %w", path, err)
	}
	// Stopping waits for handlers, so no Allocate outlives its server.
	options := []grpc.ServerOption{grpc.WaitForHandlers(true)}
	if s.cfg.Interceptor != nil {
		options = append(options, grpc.UnaryInterceptor(s.cfg.Interceptor))
	}
	server := grpc.NewServer(options...)
	pluginapi.RegisterDevicePluginServer(server, plugin)
	serveErr := make(chan error, 1)
	go func() { serveErr <- server.Serve(listener) }()
	return server, serveErr, nil
}

// watchDir makes sure the plugin directory exists and watches it.
func (s *Server) watchDir(watcher *fsnotify.Watcher) error {
	if err := os.MkdirAll(s.cfg.PluginDir, 0o750); err != nil {
		return fmt.Errorf("create device plugin directory %s: %w", s.cfg.PluginDir, err)
	}
	if err := watcher.Add(s.cfg.PluginDir); err != nil {
		return fmt.Errorf("watch device plugin directory %s: %w", s.cfg.PluginDir, err)
	}
	return nil
}
