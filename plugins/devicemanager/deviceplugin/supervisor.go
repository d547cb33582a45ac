package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// supervisor owns the gRPC server, the registration and the directory
// watch; only its run goroutine touches them.
type supervisor struct {
	s          *Server
	watcher    *fsnotify.Watcher
	grpcServer *grpc.Server
	serveErr   <-chan error

	registrations int
	backoff       time.Duration
	retry         *time.Timer
}

func newSupervisor(s *Server) (*supervisor, error) {
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("create device plugin directory watcher: %w", err)
	}
	sup := &supervisor{s: s, watcher: watcher, retry: time.NewTimer(0)}
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
			sup.handleFileEvent(ctx, event)
		case err, ok := <-sup.watcher.Errors:
			if ok {
				sup.s.log.Warnf("device plugin directory watch error (registration still retries): %v", err)
			}
		case err := <-sup.serveErr:
			sup.s.log.Warnf("device plugin server on %s stopped (%v); serving again", sup.s.SocketPath(), err)
			sup.reserve(ctx)
		case <-sup.retry.C:
			sup.register(ctx)
		}
	}
}

func (sup *supervisor) handleFileEvent(ctx context.Context, event fsnotify.Event) {
	switch filepath.Clean(event.Name) {
	case sup.s.kubeletSocketPath():
		if event.Has(fsnotify.Create) {
			sup.s.log.Infof("kubelet socket %s created: registering %s", event.Name, sup.s.cfg.ResourceName)
			sup.register(ctx)
		}
	case sup.s.SocketPath():
		if !event.Has(fsnotify.Remove) && !event.Has(fsnotify.Rename) {
			return
		}
		// Our own re-serve removes and recreates the socket too; the file
		// being there again means the event is about an older socket.
		if _, err := os.Stat(sup.s.SocketPath()); err == nil {
			return
		}
		sup.s.log.Infof("device plugin socket %s removed (kubelet restarted): serving and registering again", event.Name)
		sup.reserve(ctx)
	case filepath.Clean(sup.s.cfg.PluginDir):
		if event.Has(fsnotify.Remove) || event.Has(fsnotify.Rename) {
			sup.s.log.Warnf("device plugin directory %s removed: recreating it", sup.s.cfg.PluginDir)
			if err := sup.s.watchDir(sup.watcher); err != nil {
				sup.s.log.Errorf("%v", err)
			}
			sup.reserve(ctx)
		}
	}
}

func (sup *supervisor) serve() error {
	server, serveErr, err := sup.s.listen()
	if err != nil {
		return err
	}
	sup.grpcServer, sup.serveErr = server, serveErr
	return nil
}

// reserve replaces the gRPC server and registers again at once.
func (sup *supervisor) reserve(ctx context.Context) {
	sup.stopServing()
	if err := sup.serve(); err != nil {
		sup.s.log.Errorf("serve device plugin again (retrying with registration): %v", err)
	}
	sup.register(ctx)
}

func (sup *supervisor) stopServing() {
	if sup.grpcServer != nil {
		// Stop ends every stream: ListAndWatch of the old kubelet returns.
		sup.grpcServer.Stop()
		sup.grpcServer, sup.serveErr = nil, nil
	}
}

// register tries once; on failure it arms the retry timer with backoff.
func (sup *supervisor) register(ctx context.Context) {
	sup.retry.Stop()
	if sup.grpcServer == nil {
		if err := sup.serve(); err != nil {
			sup.failed(fmt.Errorf("serve before registering: %w", err))
			return
		}
	}
	if err := sup.s.registerWithKubelet(ctx); err != nil {
		sup.failed(err)
		return
	}
	again := sup.registrations > 0
	sup.registrations++
	sup.backoff = 0
	sup.s.log.Infof("registered %s (%d devices) with kubelet at %s", sup.s.cfg.ResourceName, len(sup.s.cfg.Devices), sup.s.kubeletSocketPath())
	if sup.s.hooks.Registered != nil {
		sup.s.hooks.Registered(again)
	}
}

func (sup *supervisor) failed(err error) {
	sup.backoff = min(max(sup.backoff*2, sup.s.cfg.MinBackoff), sup.s.cfg.MaxBackoff)
	sup.s.log.Debugf("device plugin registration failed, retrying in %s: %v", sup.backoff, err)
	if sup.s.hooks.RegistrationFailed != nil {
		sup.s.hooks.RegistrationFailed(err)
	}
	sup.retry.Reset(sup.backoff)
}

func (sup *supervisor) shutdown() {
	sup.retry.Stop()
	sup.stopServing()
	sup.watcher.Close()
	if err := os.Remove(sup.s.SocketPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		sup.s.log.Warnf("remove device plugin socket %s: %v", sup.s.SocketPath(), err)
	}
}

// registerWithKubelet makes one Register call.
func (s *Server) registerWithKubelet(ctx context.Context) error {
	path := s.kubeletSocketPath()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to kubelet registration socket %s: %w", path, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RegisterTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     s.cfg.PluginSocket,
		ResourceName: s.cfg.ResourceName,
		Options:      pluginOptions(),
	})
	if err != nil {
		return fmt.Errorf("register %s with kubelet at %s: %w", s.cfg.ResourceName, path, err)
	}
	return nil
}
