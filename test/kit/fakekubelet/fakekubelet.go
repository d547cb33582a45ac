// Package fakekubelet is a stand-in for kubelet's device-plugin
// registration endpoint, for unit tests of the device plugin server: it
// accepts Register, dials the plugin back (waiting for its socket, as
// kubelet's blocking dial does), asks for its options and follows
// ListAndWatch, as kubelet does; and WriteCheckpoint writes kubelet's
// device checkpoint as kubelet's device manager does. The real kubelet
// device manager is exercised by the end-to-end tests in test/kubelet.
package fakekubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Registration is one plugin that registered, as the fake sees it.
type Registration struct {
	Request *pluginapi.RegisterRequest
	Options *pluginapi.DevicePluginOptions
	// Devices receives every device list ListAndWatch sends; it is closed
	// when the stream ends.
	Devices <-chan []*pluginapi.Device
	// Client calls the plugin.
	Client pluginapi.DevicePluginClient
}

// Options change how the registry answers; the zero value is kubelet's
// behaviour.
type Options struct {
	// BeforeDial, if set, is called in each Register call before the
	// plugin is dialled back, with the call's context (it ends when the
	// plugin cancels the call) and number (1 for the first).
	BeforeDial func(ctx context.Context, call int)
	// BeforeReply, if set, is called in each Register call that connected
	// the plugin and opened ListAndWatch, before the call is answered: it
	// may hold the answer back, as a kubelet too slow to answer in time.
	BeforeReply func(ctx context.Context, call int)
}

// Registry serves the registration socket. Create it with Start.
type Registry struct {
	pluginapi.UnimplementedRegistrationServer

	pluginDir     string
	opts          Options
	server        *grpc.Server
	registrations chan Registration
	failures      chan error
	calls         atomic.Int64

	mu     sync.Mutex
	conns  []*grpc.ClientConn
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start serves the registration socket at pluginDir/socketName.
func Start(pluginDir, socketName string) (*Registry, error) {
	return StartWith(pluginDir, socketName, Options{})
}

// StartWith is Start with options.
func StartWith(pluginDir, socketName string, opts Options) (*Registry, error) {
	path := pluginDir + "/" + socketName
	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("fake kubelet: listen on %s: %w", path, err)
	}
	return Serve(listener, pluginDir, opts), nil
}

// Serve serves the registration on listener, a socket in pluginDir.
func Serve(listener net.Listener, pluginDir string, opts Options) *Registry {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Registry{
		pluginDir: pluginDir, opts: opts, server: grpc.NewServer(),
		registrations: make(chan Registration, 16), failures: make(chan error, 16),
		ctx: ctx, cancel: cancel,
	}
	pluginapi.RegisterRegistrationServer(r.server, r)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.server.Serve(listener)
	}()
	return r
}

// Registrations delivers every registration in order.
func (r *Registry) Registrations() <-chan Registration { return r.registrations }

// Failures delivers the error of every Register call that failed, in order
// (dropped when nobody reads them and 16 are waiting).
func (r *Registry) Failures() <-chan error { return r.failures }

// Calls is the number of Register calls received so far.
func (r *Registry) Calls() int { return int(r.calls.Load()) }

// Register implements pluginapi.RegistrationServer.
func (r *Registry) Register(ctx context.Context, request *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	call := int(r.calls.Add(1))
	if r.opts.BeforeDial != nil {
		r.opts.BeforeDial(ctx, call)
	}
	empty, err := r.register(ctx, request)
	if err == nil && r.opts.BeforeReply != nil {
		r.opts.BeforeReply(ctx, call)
	}
	if err != nil {
		select {
		case r.failures <- err:
		default:
		}
	}
	return empty, err
}

func (r *Registry) register(ctx context.Context, request *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	conn, err := grpc.NewClient("unix://"+r.pluginDir+"/"+request.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.conns = append(r.conns, conn)
	r.mu.Unlock()
	client := pluginapi.NewDevicePluginClient(conn)
	// kubelet dials with grpc.WithBlock: it waits for the socket until the
	// call's context ends.
	options, err := client.GetDevicePluginOptions(ctx, &pluginapi.Empty{}, grpc.WaitForReady(true))
	if err != nil {
		return nil, fmt.Errorf("fake kubelet: get options of %s: %w", request.ResourceName, err)
	}
	stream, err := client.ListAndWatch(r.ctx, &pluginapi.Empty{})
	if err != nil {
		return nil, fmt.Errorf("fake kubelet: list and watch %s: %w", request.ResourceName, err)
	}
	devices := make(chan []*pluginapi.Device, 16)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(devices)
		for {
			response, err := stream.Recv()
			if err != nil {
				return
			}
			select {
			case devices <- response.Devices:
			case <-r.ctx.Done():
				return
			}
		}
	}()
	r.registrations <- Registration{Request: request, Options: options, Devices: devices, Client: client}
	return &pluginapi.Empty{}, nil
}

// Stop stops serving, ends every ListAndWatch it follows and removes the
// socket, as a stopping kubelet does.
func (r *Registry) Stop() {
	r.server.Stop()
	r.cancel()
	r.mu.Lock()
	for _, conn := range r.conns {
		conn.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// WipeDir removes every file in the plugin directory, as kubelet does when
// it starts.
func WipeDir(pluginDir string) error {
	entries, err := os.ReadDir(pluginDir)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if err := os.Remove(pluginDir + "/" + entry.Name()); err != nil {
			return err
		}
	}
	return nil
}

// StartForAgent serves the registration socket kubelet.sock in pluginDir,
// made if missing, for an agent that is to register any number of times
// while nobody reads Registrations: they are drained. It stops when tb's
// test ends.
func StartForAgent(tb testing.TB, pluginDir string) {
	tb.Helper()
	if err := os.MkdirAll(pluginDir, 0o750); err != nil {
		tb.Fatalf("create the device plugin directory: %v", err)
	}
	registry, err := Start(pluginDir, "kubelet.sock")
	if err != nil {
		tb.Fatalf("fake kubelet registration server: %v", err)
	}
	stop, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case <-registry.Registrations():
			case <-stop:
				return
			}
		}
	}()
	tb.Cleanup(func() {
		close(stop)
		<-drained
		registry.Stop()
	})
}
