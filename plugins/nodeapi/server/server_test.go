package server_test

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
	"github.com/contivpp/memif-agent/test/kit/needs"
)

// allocatedAt is the device manager's clock: every allocation is made then.
var allocatedAt = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return allocatedAt }

var web = podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web"}

// startWithWebMemif runs the real device manager with one allocation of
// two devices, bound to container app of pod default/web.
func startWithWebMemif(t *testing.T) (*manager.Manager, *dmapi.AllocateDevice) {
	t.Helper()
	devices, loop := devicemanagertest.Start(t, fixedClock)
	allocation := devicemanagertest.Allocate(t, loop, "memif-000", "memif-001")
	devicemanagertest.AddPod(t, loop, devices, web, devicemanagertest.Container{Name: "app", Allocation: allocation})
	return devices, allocation
}

func startAPI(t testing.TB, devices dmapi.DeviceManagerAPI, history controllerapi.EventHistory, config server.Config) memifv1.MemifAgentClient {
	t.Helper()
	if config.SocketPath == "" {
		config.SocketPath = filepath.Join(t.TempDir(), "api", "api.sock")
	}
	srv, err := server.Start(config, server.NewService(devices, history, server.WatchLimits{}))
	if err != nil {
		t.Fatalf("start API: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close API: %v", err)
		}
	})
	conn, err := grpc.NewClient("unix://"+config.SocketPath, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial API: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return memifv1.NewMemifAgentClient(conn)
}

func TestListAllocationsShowsSecretsOnlyWhenAsked(t *testing.T) {
	devices, allocation := startWithWebMemif(t)
	client := startAPI(t, devices, nil, server.Config{})
	for _, tc := range []struct {
		name           string
		includeSecrets bool
		wantSecret     string
	}{
		{"without secrets", false, ""},
		{"with secrets", true, allocation.Envs[dmapi.EnvMemifSecret]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.ListAllocations(t.Context(), &memifv1.ListAllocationsRequest{IncludeSecrets: tc.includeSecrets})
			if err != nil {
				t.Fatalf("ListAllocations: %v", err)
			}
			if len(resp.Allocations) != 1 {
				t.Fatalf("got %d allocations, want 1", len(resp.Allocations))
			}
			got := resp.Allocations[0]
			if got.Secret != tc.wantSecret {
				t.Errorf("secret = %q, want %q", got.Secret, tc.wantSecret)
			}
			if got.AllocationId != allocation.AllocationID || got.HostSocket != allocation.Annotations[dmapi.AnnotationSocketHost] ||
				got.PodName != "web" || got.ContainerName != "app" || !slices.Equal(got.DeviceIds, allocation.DeviceIDs) ||
				!got.AllocatedAt.AsTime().Equal(allocatedAt) {
				t.Errorf("allocation = %v, want the web pod's memif %s", got, allocation.AllocationID)
			}
		})
	}
}

func TestGetPodMemifs(t *testing.T) {
	devices, _ := startWithWebMemif(t)
	client := startAPI(t, devices, nil, server.Config{})
	for _, tc := range []struct {
		name, namespace, pod string
		wantCode             codes.Code
	}{
		{"pod with a memif", "default", "web", codes.OK},
		{"pod without a memif", "default", "db", codes.NotFound},
		{"upper-case namespace", "Default", "web", codes.InvalidArgument},
		{"empty name", "default", "", codes.InvalidArgument},
		{"name with a slash", "default", "web/x", codes.InvalidArgument},
		{"namespace longer than 63", string(make([]byte, 64)), "web", codes.InvalidArgument},
		{"dotted pod name", "default", "web.example", codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.GetPodMemifs(t.Context(), &memifv1.GetPodMemifsRequest{Namespace: tc.namespace, Name: tc.pod})
			if code := status.Code(err); code != tc.wantCode {
				t.Fatalf("GetPodMemifs(%s/%s) code = %v (%v), want %v", tc.namespace, tc.pod, code, err, tc.wantCode)
			}
			if tc.wantCode == codes.OK && (len(resp.Memifs) != 1 || resp.Memifs[0].Secret != "") {
				t.Errorf("memifs = %v, want one memif without its secret", resp.Memifs)
			}
		})
	}
}

func TestWatchAllocationsStreamsChanges(t *testing.T) {
	devices, loop := devicemanagertest.Start(t, fixedClock)
	client := startAPI(t, devices, nil, server.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := client.WatchAllocations(ctx, &memifv1.WatchAllocationsRequest{})
	if err != nil {
		t.Fatalf("WatchAllocations: %v", err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatalf("wait for the watch to be registered: %v", err)
	}
	allocation := devicemanagertest.Allocate(t, loop, "memif-003")
	devicemanagertest.AddPod(t, loop, devices, web, devicemanagertest.Container{Name: "app", Allocation: allocation})
	devicemanagertest.DeletePod(t, loop, devices, web)

	want := []memifv1.ChangeKind{
		memifv1.ChangeKind_CHANGE_KIND_ALLOCATED,
		memifv1.ChangeKind_CHANGE_KIND_BOUND,
		memifv1.ChangeKind_CHANGE_KIND_RELEASED,
	}
	for i, wantKind := range want {
		change, err := stream.Recv()
		if err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		if change.Kind != wantKind || change.Allocation.AllocationId != allocation.AllocationID || change.Allocation.Secret != "" {
			t.Errorf("change %d = %v, want %v of %s without secret", i, change, wantKind, allocation.AllocationID)
		}
	}
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("after cancel: %v, want Canceled", err)
	}
}

// eventSummary is what a user reads of an event record.
type eventSummary struct {
	seq           uint64
	name, method  string
	handlerAction string
	failed        bool
}

func summarize(events []*memifv1.EventRecord) []eventSummary {
	var out []eventSummary
	for _, event := range events {
		summary := eventSummary{seq: event.Seq, name: event.Name, method: event.Method, failed: event.Error != ""}
		for _, handler := range event.Handlers {
			summary.handlerAction = handler.Handler + " " + handler.Action
			if (handler.Error != "") != summary.failed {
				summary.handlerAction += " (handler and event outcomes differ)"
			}
		}
		out = append(out, summary)
	}
	return out
}

func TestGetEventHistory(t *testing.T) {
	devices, loop := devicemanagertest.Start(t, fixedClock)
	allocation := devicemanagertest.Allocate(t, loop, "memif-000")
	unknownDevice := dmapi.NewAllocateDevice(dmapi.DefaultResourceName, []string{"memif-999"})
	if err := loop.PushEvent(unknownDevice); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := unknownDevice.Wait(ctx); err == nil {
		t.Fatal("allocating an unknown device succeeded")
	}
	devicemanagertest.AddPod(t, loop, devices, web, devicemanagertest.Container{Name: "app", Allocation: allocation})
	devicemanagertest.WaitForHistory(t, loop, 4)

	client := startAPI(t, devices, loop, server.Config{})
	resync := eventSummary{1, "StartupResync", "full-resync", "devicemanager resync", false}
	allocate := eventSummary{2, "AllocateDevice", "update", "devicemanager update", false}
	refused := eventSummary{3, "AllocateDevice", "update", "devicemanager update", true}
	bind := eventSummary{4, "AddPod", "update", "devicemanager update", false}
	for _, tc := range []struct {
		name string
		req  *memifv1.GetEventHistoryRequest
		want []eventSummary
	}{
		{"all", &memifv1.GetEventHistoryRequest{}, []eventSummary{resync, allocate, refused, bind}},
		{"since 1", &memifv1.GetEventHistoryRequest{SinceSeq: 1}, []eventSummary{allocate, refused, bind}},
		{"last 2", &memifv1.GetEventHistoryRequest{Last: 2}, []eventSummary{refused, bind}},
		{"last 1 since 1", &memifv1.GetEventHistoryRequest{SinceSeq: 1, Last: 1}, []eventSummary{bind}},
		{"since the newest", &memifv1.GetEventHistoryRequest{SinceSeq: 4}, nil},
		{"more than kept", &memifv1.GetEventHistoryRequest{Last: 100}, []eventSummary{resync, allocate, refused, bind}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.GetEventHistory(t.Context(), tc.req)
			if err != nil {
				t.Fatalf("GetEventHistory: %v", err)
			}
			if got := summarize(resp.Events); !slices.Equal(got, tc.want) {
				t.Errorf("events = %+v, want %+v", got, tc.want)
			}
			for _, event := range resp.Events {
				if event.StartedAt == nil || event.FinishedAt == nil {
					t.Errorf("event %d has no start or finish time", event.Seq)
				}
				if event.Seq == refused.seq && !strings.Contains(event.Error, "memif-999") {
					t.Errorf("event %d error = %q, want it to name the unknown device memif-999", event.Seq, event.Error)
				}
				if strings.Contains(event.Description, allocation.Envs[dmapi.EnvMemifSecret]) {
					t.Errorf("event %d shows the memif secret", event.Seq)
				}
			}
		})
	}
}

func TestGetEventHistoryWithoutHistoryIsUnavailable(t *testing.T) {
	client := startAPI(t, devicemanagertest.New(t, nil), nil, server.Config{})
	_, err := client.GetEventHistory(t.Context(), &memifv1.GetEventHistoryRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("GetEventHistory = %v, want Unavailable", err)
	}
}

func TestSocketModeIsWhatConfigSays(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mode        fs.FileMode
		group       string
		wantSocket  fs.FileMode
		wantDirMode fs.FileMode
		// wantGID is the group of the socket and its directory; -1: the
		// agent's own.
		wantGID int
	}{
		{"default", 0, "", 0o600, 0o700, -1},
		{"group by mode only", 0o660, "", 0o660, 0o750, -1},
		{"group by name", 0o660, "nogroup", 0o660, 0o750, 65534},
		{"group by number", 0o660, "65534", 0o660, 0o750, 65534},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantGID >= 0 {
				needs.Root(t, "giving a socket to another group")
			}
			path := filepath.Join(t.TempDir(), "run", "api.sock")
			// Under umask 0 a new socket is world-writable until chmod;
			// the API must never show that at its path.
			defer syscall.Umask(syscall.Umask(0))
			startAPI(t, devicemanagertest.New(t, nil), nil, server.Config{SocketPath: path, SocketMode: tc.mode, SocketGroup: tc.group})
			if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 1 || entries[0].Name() != "api.sock" {
				t.Errorf("socket directory holds %v (%v), want only api.sock", entries, err)
			}
			for _, want := range []struct {
				path string
				mode fs.FileMode
			}{{path, tc.wantSocket}, {filepath.Dir(path), tc.wantDirMode}} {
				info, err := os.Stat(want.path)
				if err != nil {
					t.Fatal(err)
				}
				if info.Mode().Perm() != want.mode {
					t.Errorf("%s mode = %v, want %v", want.path, info.Mode().Perm(), want.mode)
				}
				gid := int(info.Sys().(*syscall.Stat_t).Gid)
				if wantGID := tc.wantGID; wantGID < 0 && gid != os.Getegid() || wantGID >= 0 && gid != wantGID {
					t.Errorf("%s group = %d, want %d (-1: the agent's, %d)", want.path, gid, tc.wantGID, os.Getegid())
				}
			}
		})
	}
}

func TestUnknownSocketGroupIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api.sock")
	_, err := server.Start(server.Config{SocketPath: path, SocketGroup: "no-such-group-here"}, server.NewService(devicemanagertest.New(t, nil), nil, server.WatchLimits{}))
	if err == nil || !strings.Contains(err.Error(), `API socket group "no-such-group-here"`) {
		t.Errorf("Start with an unknown group = %v, want an error naming the group", err)
	}
}

func TestStartWithSocketLeftovers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr bool
	}{
		{"nothing there", func(*testing.T, string) {}, false},
		{"stale socket of a previous run", leaveStaleSocket, false},
		{"socket left by a start interrupted before its rename", func(t *testing.T, path string) {
			leaveStaleSocket(t, path+".new")
		}, false},
		{"socket in use", serveSocket, true},
		{"regular file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "api.sock")
			tc.prepare(t, path)
			srv, err := server.Start(server.Config{SocketPath: path}, server.NewService(devicemanagertest.New(t, nil), nil, server.WatchLimits{}))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Start = %v, want error: %v", err, tc.wantErr)
			}
			if srv != nil {
				srv.Close()
			}
		})
	}
}

func leaveStaleSocket(t *testing.T, path string) {
	listener, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	listener.SetUnlinkOnClose(false)
	listener.Close()
}

func serveSocket(t *testing.T, path string) {
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
}

// When a DaemonSet replaces the agent, the new agent can make its socket at
// the same path (the old one's is stale by then) before the old agent has
// finished closing: the old agent's Close must leave the new socket alone.
func TestCloseLeavesTheSocketOfAReplacement(t *testing.T) {
	devices, _ := startWithWebMemif(t)
	path := filepath.Join(t.TempDir(), "api.sock")
	old, err := server.Start(server.Config{SocketPath: path}, server.NewService(devices, nil, server.WatchLimits{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	replacement := startAPI(t, devices, nil, server.Config{SocketPath: path})
	if err := old.Close(); err != nil {
		t.Fatalf("close the old server: %v", err)
	}
	reply, err := replacement.ListAllocations(context.Background(), &memifv1.ListAllocationsRequest{})
	if err != nil {
		t.Fatalf("the replacement's API after the old server closed: %v", err)
	}
	if len(reply.Allocations) != 1 {
		t.Errorf("the replacement lists %d allocations, want 1", len(reply.Allocations))
	}
}
