package deviceplugin_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// waitLimit only bounds a failing test; nothing asserts how long things take.
const waitLimit = 20 * time.Second

// registrationCounter is the server's Observer in the tests: it counts
// the registrations, and logs and counts every failed one.
type registrationCounter struct {
	t           *testing.T
	mu          sync.Mutex
	first, more int
	failures    atomic.Int32
}

func newRegistrationCounter(t *testing.T) *registrationCounter { return &registrationCounter{t: t} }

func (c *registrationCounter) Registered(again bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if again {
		c.more++
	} else {
		c.first++
	}
}

func (c *registrationCounter) RegistrationFailed(err error) {
	c.failures.Add(1)
	c.t.Logf("registration failed: %v", err)
}

func (c *registrationCounter) Answered(time.Duration, error) {}

// waitTotal waits until the plugin has seen total successful registrations:
// the registry sees a registration just before the plugin gets the answer.
func (c *registrationCounter) waitTotal(t *testing.T, total int) {
	t.Helper()
	poll.Until(t, waitLimit, fmt.Sprintf("the plugin seeing %d successful registrations", total), func() error {
		if first, more := c.counts(); first+more < total {
			return fmt.Errorf("it saw %d", first+more)
		}
		return nil
	})
}

func (c *registrationCounter) counts() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first, c.more
}

func startServer(t *testing.T, dir string, allocator deviceplugin.Allocator, observer deviceplugin.Observer) *deviceplugin.Server {
	t.Helper()
	return startServerWith(t, testConfig(dir), allocator, observer)
}

func testConfig(dir string) deviceplugin.Config {
	return deviceplugin.Config{
		ResourceName: "contivpp.io/memif", PluginDir: dir, PluginSocket: "memif.sock", KubeletSocket: "kubelet.sock",
		Devices: []string{"memif-000", "memif-001", "memif-002", "memif-003"},
	}
}

func startServerWith(t *testing.T, cfg deviceplugin.Config, allocator deviceplugin.Allocator, observer deviceplugin.Observer) *deviceplugin.Server {
	t.Helper()
	server, err := deviceplugin.New(cfg, allocator, testlog.New(t), observer)
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	return server
}

func startRegistry(t *testing.T, dir string) *fakekubelet.Registry {
	t.Helper()
	registry, err := fakekubelet.Start(dir, "kubelet.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(registry.Stop)
	return registry
}

func nextRegistration(t *testing.T, registry *fakekubelet.Registry) fakekubelet.Registration {
	t.Helper()
	select {
	case r := <-registry.Registrations():
		return r
	case <-time.After(waitLimit):
		t.Fatal("the plugin did not register")
	}
	return fakekubelet.Registration{}
}

func nextDevices(t *testing.T, r fakekubelet.Registration) ([]*pluginapi.Device, bool) {
	t.Helper()
	select {
	case devices, ok := <-r.Devices:
		return devices, ok
	case <-time.After(waitLimit):
		t.Fatal("ListAndWatch sent nothing and did not end")
	}
	return nil, false
}

func TestRegistersAndAdvertisesDevices(t *testing.T) {
	dir := t.TempDir()
	registry := startRegistry(t, dir)
	server := startServer(t, dir, &fakeAllocator{}, nil)

	r := nextRegistration(t, registry)
	if r.Request.ResourceName != "contivpp.io/memif" || r.Request.Endpoint != "memif.sock" || r.Request.Version != pluginapi.Version {
		t.Errorf("Register request = %v", r.Request)
	}
	if r.Options.PreStartRequired || r.Options.GetPreferredAllocationAvailable {
		t.Errorf("options = %v, want neither PreStartContainer nor GetPreferredAllocation", r.Options)
	}
	devices, _ := nextDevices(t, r)
	if len(devices) != 4 || devices[0].ID != "memif-000" || devices[3].Health != pluginapi.Healthy {
		t.Errorf("first device list = %v, want memif-000..memif-003, healthy", devices)
	}
	info, err := os.Stat(server.SocketPath())
	if err != nil || info.Mode().Perm() != 0o600 || info.Mode()&os.ModeSocket == 0 {
		t.Errorf("plugin socket = %v, %v; want a socket of mode 0600", info, err)
	}

	server.Stop()
	if _, open := nextDevices(t, r); open {
		t.Error("ListAndWatch did not end when the server stopped")
	}
	if _, err := os.Stat(server.SocketPath()); !os.IsNotExist(err) {
		t.Errorf("socket still there after Stop: %v", err)
	}
}

func TestRegistersWhenKubeletAppears(t *testing.T) {
	dir := t.TempDir()
	startServer(t, dir, &fakeAllocator{}, nil)
	registry := startRegistry(t, dir)
	r := nextRegistration(t, registry)
	if r.Request.ResourceName != "contivpp.io/memif" {
		t.Errorf("registered %q", r.Request.ResourceName)
	}
}

func TestReRegistersAfterKubeletRestarts(t *testing.T) {
	cases := []struct {
		name string
		// lastRegistryCalls is how many Register calls the last registry
		// should have got.
		lastRegistryCalls int
		restart           func(t *testing.T, dir string, registry *fakekubelet.Registry) *fakekubelet.Registry
	}{
		{"kubelet restarts and wipes the directory", 1, func(t *testing.T, dir string, registry *fakekubelet.Registry) *fakekubelet.Registry {
			registry.Stop()
			if err := fakekubelet.WipeDir(dir); err != nil {
				t.Fatal(err)
			}
			return startRegistry(t, dir)
		}},
		{"only our socket is deleted", 4, func(t *testing.T, dir string, registry *fakekubelet.Registry) *fakekubelet.Registry {
			if err := os.Remove(filepath.Join(dir, "memif.sock")); err != nil {
				t.Fatal(err)
			}
			return registry
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			registry := startRegistry(t, dir)
			counter := newRegistrationCounter(t)
			server := startServer(t, dir, &fakeAllocator{}, counter)
			old := nextRegistration(t, registry)
			nextDevices(t, old)
			counter.waitTotal(t, 1)
			for round := 1; round <= 3; round++ {
				registry = tc.restart(t, dir, registry)
				r := nextRegistration(t, registry)
				if devices, _ := nextDevices(t, r); len(devices) != 4 {
					t.Fatalf("round %d: device list after re-registration = %v", round, devices)
				}
				if _, open := nextDevices(t, old); open {
					t.Errorf("round %d: the old ListAndWatch stream was not ended", round)
				}
				old = r
				counter.waitTotal(t, round+1)
			}
			server.Stop() // waits for the registration in flight to be counted
			if first, more := counter.counts(); first != 1 || more != 3 {
				t.Errorf("registrations: %d first, %d again; want 1 and 3", first, more)
			}
			// One Register call per kubelet and plugin socket pair: a stale
			// event about a pair already registered must not register it
			// again (kubelet refuses that: "device plugin already connected").
			if calls := registry.Calls(); calls != tc.lastRegistryCalls {
				t.Errorf("the last kubelet got %d Register calls, want %d", calls, tc.lastRegistryCalls)
			}
		})
	}
}

// TestOurSocketRemovedWhileRegistering: kubelet's startup cleanup removes
// our socket while a Register call is in flight (kubelet is dialling us
// back, and waits for the socket until the call ends). The plugin must
// cancel that call, serve again and register again, not wait for the
// register timeout: the timeout here is far beyond waitLimit, so waiting
// for it fails the test. The registry holds the call until the plugin has
// cancelled it (or waitLimit passed), so a kubelet that dials the new
// socket first cannot hide a call the plugin left running.
func TestOurSocketRemovedWhileRegistering(t *testing.T) {
	cases := []struct {
		name         string
		removeOnCall int
		restart      bool
	}{
		{"first registration", 1, false},
		{"registration after a kubelet restart", 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			socket := filepath.Join(dir, "memif.sock")
			removeOnCall := func(ctx context.Context, call int) {
				if call != tc.removeOnCall {
					return
				}
				if err := os.Remove(socket); err != nil {
					t.Errorf("remove our socket during Register: %v", err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(waitLimit):
				}
			}
			var registry *fakekubelet.Registry
			if !tc.restart {
				registry = startRegistryWith(t, dir, fakekubelet.Options{BeforeDial: removeOnCall})
			} else {
				registry = startRegistry(t, dir)
			}
			cfg := testConfig(dir)
			cfg.RegisterTimeout = 100 * waitLimit
			counter := newRegistrationCounter(t)
			startServerWith(t, cfg, &fakeAllocator{}, counter)
			if tc.restart {
				nextDevices(t, nextRegistration(t, registry))
				counter.waitTotal(t, 1)
				registry.Stop()
				registry = startRegistryWith(t, dir, fakekubelet.Options{BeforeDial: func(ctx context.Context, call int) { removeOnCall(ctx, call+1) }})
			}

			r := nextRegistration(t, registry)
			if devices, _ := nextDevices(t, r); len(devices) != 4 {
				t.Errorf("device list after registering again = %v, want 4 devices", devices)
			}
			select {
			case err := <-registry.Failures():
				if status.Code(err) != codes.Canceled {
					t.Errorf("the Register call in flight ended with %v, want it cancelled by the plugin", err)
				}
			case <-time.After(waitLimit):
				t.Error("the Register call in flight did not fail, yet its socket was removed")
			}
			if calls := registry.Calls(); calls != 2 {
				t.Errorf("kubelet got %d Register calls, want 2 (the cancelled one and the good one)", calls)
			}
		})
	}
}

// TestRegistersWhenKubeletSocketIsBoundBeforeListening: kubelet binds its
// socket (the file appears, the plugin is told) before it listens, and a
// connection in between is refused. The plugin's Register call must wait
// for kubelet to listen, not fail and back off (which, after the burst of
// events of a kubelet restart, left capacity away for seconds).
func TestRegistersWhenKubeletSocketIsBoundBeforeListening(t *testing.T) {
	dir := t.TempDir()
	counter := newRegistrationCounter(t)
	socket := boundSocket(t, filepath.Join(dir, "kubelet.sock"))
	defer socket.Close()
	fd := int(socket.Fd())
	startServer(t, dir, &fakeAllocator{}, counter)
	// Give the plugin time to try the bound socket; this bounds the wait
	// only: on a slow machine the test may check less, never fail wrongly.
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline) && counter.failures.Load() == 0; {
		time.Sleep(time.Millisecond)
	}
	if err := syscall.Listen(fd, 16); err != nil {
		t.Fatal(err)
	}
	listener, err := net.FileListener(socket)
	if err != nil {
		t.Fatal(err)
	}
	registry := fakekubelet.Serve(listener, dir, fakekubelet.Options{})
	t.Cleanup(registry.Stop)

	nextDevices(t, nextRegistration(t, registry))
	counter.waitTotal(t, 1)
	if n := counter.failures.Load(); n != 0 {
		t.Errorf("%d registrations failed while kubelet's socket was bound but not listening, want none", n)
	}
}

// boundSocket makes a socket bound at path that does not listen: a
// connection is refused until the caller listens on it.
func boundSocket(t *testing.T, path string) *os.File {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	socket := os.NewFile(uintptr(fd), filepath.Base(path))
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		socket.Close()
		t.Fatal(err)
	}
	return socket
}

func startRegistryWith(t *testing.T, dir string, opts fakekubelet.Options) *fakekubelet.Registry {
	t.Helper()
	registry, err := fakekubelet.StartWith(dir, "kubelet.sock", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(registry.Stop)
	return registry
}

// TestStopLeavesNoGoroutines: after Stop, and kubelet's side gone, every
// goroutine the server started (serving, supervision, ListAndWatch) ended.
func TestStopLeavesNoGoroutines(t *testing.T) {
	dir := t.TempDir()
	before := runtime.NumGoroutine()
	registry, err := fakekubelet.Start(dir, "kubelet.sock")
	if err != nil {
		t.Fatal(err)
	}
	server := startServer(t, dir, &fakeAllocator{}, nil)
	r := nextRegistration(t, registry)
	nextDevices(t, r)
	if err := os.Remove(filepath.Join(dir, "memif.sock")); err != nil {
		t.Fatal(err)
	}
	nextDevices(t, nextRegistration(t, registry))
	server.Stop()
	registry.Stop()
	poll.Until(t, waitLimit, "the goroutines of the plugin ending", func() error {
		if left := runtime.NumGoroutine(); left > before {
			buf := make([]byte, 1<<20)
			return fmt.Errorf("%d goroutines left, %d before start:\n%s", left, before, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}
