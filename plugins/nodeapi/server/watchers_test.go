package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// watchAPI is the API served over a real device manager and event loop.
type watchAPI struct {
	service *server.Service
	socket  string
	devices *manager.Manager
	loop    controllerapi.EventLoop
	cycles  int
}

func startWatchAPI(t *testing.T, limits server.WatchLimits) *watchAPI {
	t.Helper()
	devices, loop := devicemanagertest.Start(t, fixedClock)
	api := &watchAPI{service: server.NewService(devices, nil, limits), socket: filepath.Join(t.TempDir(), "api.sock"), devices: devices, loop: loop}
	srv, err := server.Start(server.Config{SocketPath: api.socket}, api.service)
	if err != nil {
		t.Fatalf("start API: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close API: %v", err)
		}
	})
	return api
}

// connect opens a connection of its own, with gRPC's smallest flow-control
// window (64 KiB, no growth): a client that does not read stalls soon.
func (a *watchAPI) connect(t *testing.T) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+a.socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatalf("dial API: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// watch opens a watch on conn and waits until it is registered.
func watch(t *testing.T, conn *grpc.ClientConn) grpc.ServerStreamingClient[memifv1.AllocationChange] {
	t.Helper()
	stream, err := memifv1.NewMemifAgentClient(conn).WatchAllocations(t.Context(), &memifv1.WatchAllocationsRequest{})
	if err != nil {
		t.Fatalf("WatchAllocations: %v", err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("wait for the watch to be registered: %v", err)
	}
	return stream
}

// cycle allocates a memif, binds it to a pod and releases it: three
// changes for every watcher.
func (a *watchAPI) cycle(t *testing.T) {
	t.Helper()
	a.cycles++
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: fmt.Sprintf("pod-%d", a.cycles)}, UID: fmt.Sprintf("uid-%d", a.cycles)}
	allocation := devicemanagertest.Allocate(t, a.loop, "memif-000")
	devicemanagertest.AddPod(t, a.loop, a.devices, pod, devicemanagertest.Container{Name: "app", Allocation: allocation})
	devicemanagertest.DeletePod(t, a.loop, a.devices, pod)
}

// TestStalledWatchersAreEnded (issue 36): watchers that never read are
// ended once they fall watch-buffer (the default, 64) changes behind, while their clients
// still do not read, and a watcher that reads gets every change
// meanwhile. Their goroutines end and, once their connections close,
// nothing of them is counted. Before, a stalled watcher's stream stayed
// open, blocked in Send, holding its goroutines and buffers until the
// client went: 3,000 of them took the agent to 341 MB.
func TestStalledWatchersAreEnded(t *testing.T) {
	const stalledCount = 20
	api := startWatchAPI(t, server.WatchLimits{MaxPerUser: stalledCount + 1})
	live := watch(t, api.connect(t))
	var liveChanges atomic.Int64
	liveEnded := make(chan error, 1)
	go func() {
		for {
			if _, err := live.Recv(); err != nil {
				liveEnded <- err
				return
			}
			liveChanges.Add(1)
		}
	}()
	goroutinesBefore := runtime.NumGoroutine()
	var stalledConns []*grpc.ClientConn
	var stalled []grpc.ServerStreamingClient[memifv1.AllocationChange]
	for range stalledCount {
		conn := api.connect(t)
		stalledConns = append(stalledConns, conn)
		stalled = append(stalled, watch(t, conn))
	}
	if got := api.service.Watchers(); got.Open != stalledCount+1 {
		t.Fatalf("watchers = %+v, want %d open", got, stalledCount+1)
	}

	// Each cycle is three changes; the stalled clients' own window and
	// gRPC's send quota hold a few hundred before a watcher falls behind.
	poll.Every(t, waitLimit, 0, "the stalled watchers ended while their clients do not read", func() error {
		api.cycle(t)
		if got := api.service.Watchers(); got.Open != 1 || got.FellBehind != stalledCount {
			return fmt.Errorf("after %d changes: watchers = %+v, want 1 open and %d fell behind", 3*api.cycles, got, stalledCount)
		}
		return nil
	})

	// A stalled client that reads at last gets what was sent, then why
	// its watch ended.
	var err error
	for err == nil {
		_, err = stalled[0].Recv()
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "watch again") {
		t.Errorf("the stalled watch ended with %v, want ResourceExhausted saying to watch again", err)
	}

	for _, conn := range stalledConns {
		conn.Close()
	}
	poll.Until(t, waitLimit, "the stalled watchers' connections closed and their goroutines ended", func() error {
		if got := api.service.Watchers(); got.Open != 1 || got.FellBehind != 0 {
			return fmt.Errorf("watchers = %+v, want 1 open and none fell behind", got)
		}
		if n := runtime.NumGoroutine(); n > goroutinesBefore {
			return fmt.Errorf("%d goroutines, %d before the stalled watchers", n, goroutinesBefore)
		}
		return nil
	})
	poll.Until(t, waitLimit, "the reading watcher got every change", func() error {
		select {
		case err := <-liveEnded:
			t.Fatalf("the reading watcher ended: %v", err)
		default:
		}
		if got, want := liveChanges.Load(), int64(3*api.cycles); got != want {
			return fmt.Errorf("the reading watcher got %d changes, want %d", got, want)
		}
		return nil
	})
}

// TestWatchersOverTheCapsAreRefused: a watch beyond max-watchers-per-user
// (of the client's user) or max-watchers (in all) is refused with
// ResourceExhausted naming the key; once one ends, a new one is served.
// Before, watchers were unbounded.
func TestWatchersOverTheCapsAreRefused(t *testing.T) {
	cases := []struct {
		name        string
		limits      server.WatchLimits
		allowed     int
		wantMessage string
	}{
		{"per user", server.WatchLimits{Max: 10, MaxPerUser: 2}, 2, "max-watchers-per-user is 2 (nodeapi.conf)"},
		{"in all", server.WatchLimits{Max: 3, MaxPerUser: 10}, 3, "max-watchers is 3 (nodeapi.conf)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := startWatchAPI(t, tc.limits)
			client := memifv1.NewMemifAgentClient(api.connect(t))
			ctx, endFirst := context.WithCancel(t.Context())
			if _, err := client.WatchAllocations(ctx, &memifv1.WatchAllocationsRequest{}); err != nil {
				t.Fatal(err)
			}
			for range tc.allowed - 1 {
				watch(t, api.connect(t))
			}
			poll.Until(t, waitLimit, "the allowed watches registered", func() error {
				if got := api.service.Watchers(); got.Open != tc.allowed {
					return fmt.Errorf("watchers = %+v, want %d open", got, tc.allowed)
				}
				return nil
			})
			// A watch served would wait for changes: the bound ends it.
			overCtx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			over, err := client.WatchAllocations(overCtx, &memifv1.WatchAllocationsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := over.Recv(); status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), tc.wantMessage) {
				t.Errorf("watch %d: %v, want ResourceExhausted saying %q", tc.allowed+1, err, tc.wantMessage)
			}
			endFirst()
			poll.Until(t, waitLimit, "a watch served once one ended", func() error {
				if got := api.service.Watchers(); got.Open != tc.allowed-1 {
					return fmt.Errorf("watchers = %+v, want %d open", got, tc.allowed-1)
				}
				return nil
			})
			watch(t, api.connect(t))
		})
	}
}
