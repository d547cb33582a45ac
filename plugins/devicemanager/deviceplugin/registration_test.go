package deviceplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/unixsocket"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// TestRegistrationReachesNoNewerKubelet: a kubelet killed leaves its socket
// behind, and the restarted kubelet removes it and listens at the same
// path. A Register call made for the old socket retries its connection
// and, without a check, reaches the new kubelet, which then also gets the
// call the plugin makes for its socket: kubelet refuses the second as
// "already connected" and forgets the endpoint of the first. The call for
// the old socket must reach no kubelet.
func TestRegistrationReachesNoNewerKubelet(t *testing.T) {
	for _, tc := range []struct {
		name string
		// whileCalling: the new kubelet starts while the call retries its
		// connection; else before the call.
		whileCalling bool
	}{
		{"the old socket replaced before the call", false},
		{"the old socket replaced while the call retries", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "kubelet.sock")
			old := deadSocket(t, path)
			server, err := deviceplugin.New(testConfig(dir), &fakeAllocator{}, testlog.New(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			restart := func() *fakekubelet.Registry {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				return startRegistry(t, dir)
			}
			var registry *fakekubelet.Registry
			if !tc.whileCalling {
				registry = restart()
			}
			called := make(chan error, 1)
			go func() { called <- deviceplugin.RegisterWithKubelet(context.Background(), server, old) }()
			if tc.whileCalling {
				registry = restart()
			}
			select {
			case err = <-called:
			case <-time.After(waitLimit):
				t.Fatal("the Register call for the old kubelet socket did not return")
			}
			if !errors.Is(err, unixsocket.ErrReplaced) {
				t.Errorf("Register for the old kubelet socket = %v, want it refused as replaced", err)
			}
			registry.Stop()
			if calls := registry.Calls(); calls != 0 {
				t.Errorf("the new kubelet got %d Register calls meant for the old one, want none", calls)
			}
		})
	}
}

// TestKubeletFollowingIsItsAnswer: kubelet took the registration and
// follows the device list, but its answer to the Register call does not
// come (a loaded kubelet, a call that ran out of time). kubelet holds the
// endpoint: a second Register would be refused as "already connected" and
// make kubelet forget it. The plugin must count the registration as done
// when kubelet opens ListAndWatch, and register no second time.
func TestKubeletFollowingIsItsAnswer(t *testing.T) {
	dir := t.TempDir()
	abandoned := make(chan struct{})
	registry := startRegistryWith(t, dir, fakekubelet.Options{BeforeReply: func(ctx context.Context, call int) {
		select {
		case <-ctx.Done():
			close(abandoned)
		case <-time.After(2 * waitLimit):
		}
	}})
	counter := newRegistrationCounter(t)
	cfg := testConfig(dir)
	cfg.RegisterTimeout = 100 * waitLimit // the answer never comes: only ListAndWatch tells
	server := startServerWith(t, cfg, &fakeAllocator{}, counter)

	if devices, _ := nextDevices(t, nextRegistration(t, registry)); len(devices) != 4 {
		t.Errorf("device list = %v, want 4 devices", devices)
	}
	counter.waitTotal(t, 1)
	select {
	case <-abandoned:
	case <-time.After(waitLimit):
		t.Error("the Register call still waits for its answer, want it cancelled once kubelet followed")
	}
	server.Stop() // no registration runs after this
	registry.Stop()
	if calls := registry.Calls(); calls != 1 {
		t.Errorf("kubelet got %d Register calls, want 1", calls)
	}
	if n := counter.failures.Load(); n != 0 {
		t.Errorf("%d registrations failed, want none", n)
	}
	if first, more := counter.counts(); first != 1 || more != 0 {
		t.Errorf("the plugin saw %d first and %d further registrations, want 1 and 0", first, more)
	}
}

// deadSocket leaves a socket file at path that refuses connections, as a
// killed kubelet leaves its own, and returns its identity.
func deadSocket(t *testing.T, path string) unixsocket.ID {
	t.Helper()
	boundSocket(t, path).Close()
	id, err := unixsocket.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSocketAttributeChangesAreNoNewSockets: a chmod, chown or relabel of
// kubelet's socket or ours (a node agent's hardening, restorecon) changes
// the files' change time but not the sockets. The plugin must neither
// serve again nor register again: kubelet would refuse the second
// registration as already connected.
func TestSocketAttributeChangesAreNoNewSockets(t *testing.T) {
	dir := t.TempDir()
	registry := startRegistry(t, dir)
	counter := newRegistrationCounter(t)
	server := startServer(t, dir, &fakeAllocator{}, counter)
	nextDevices(t, nextRegistration(t, registry))
	counter.waitTotal(t, 1)

	for _, name := range []string{"kubelet.sock", "memif.sock"} {
		if err := os.Chmod(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Give the plugin time to act on the change; this bounds the wait
	// only: on a slow machine the test may check less, never fail wrongly.
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline) && registry.Calls() == 1; {
		time.Sleep(time.Millisecond)
	}
	server.Stop()
	registry.Stop()
	if calls := registry.Calls(); calls != 1 {
		t.Errorf("kubelet got %d Register calls, want 1: a change of mode is no new socket", calls)
	}
	if first, more := counter.counts(); first != 1 || more != 0 || counter.failures.Load() != 0 {
		t.Errorf("the plugin saw %d first, %d further and %d failed registrations, want 1, 0 and 0", first, more, counter.failures.Load())
	}
}
