package server_test

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/internal/testutil/devicemanagerstandin"
	devapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

var allocatedAt = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func webMemif() devapi.MemifInfo {
	return devapi.MemifInfo{
		AllocationID:    "alloc-1",
		DeviceIDs:       []string{"memif-3"},
		Pod:             podapi.PodID{Namespace: "default", Name: "web"},
		PodUID:          "uid-web",
		ContainerName:   "app",
		HostDir:         "/var/run/contiv/memif/alloc-1",
		HostSocket:      "/var/run/contiv/memif/alloc-1/memif.sock",
		ContainerSocket: "/run/vpp/memif.sock",
		Secret:          "s3cret",
		AllocatedAt:     allocatedAt,
	}
}

// historyRecords is a fixed event history standing in for the controller's.
type historyRecords []server.EventRecord

func (h historyRecords) EventHistory(query server.HistoryQuery) []server.EventRecord {
	var out []server.EventRecord
	for _, record := range h {
		if record.Seq > query.SinceSeq {
			out = append(out, record)
		}
	}
	if query.Last > 0 && len(out) > query.Last {
		out = out[len(out)-query.Last:]
	}
	return out
}

func startAPI(t testing.TB, devices devapi.DeviceManagerAPI, history server.EventHistory, config server.Config) memifv1.MemifAgentClient {
	t.Helper()
	if config.SocketPath == "" {
		config.SocketPath = filepath.Join(t.TempDir(), "api", "api.sock")
	}
	srv, err := server.Start(config, server.NewService(devices, history, 0))
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
	devices := devicemanagerstandin.New()
	devices.Allocate(webMemif())
	client := startAPI(t, devices, nil, server.Config{})
	for _, tc := range []struct {
		name           string
		includeSecrets bool
		wantSecret     string
	}{
		{"without secrets", false, ""},
		{"with secrets", true, "s3cret"},
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
			if got.HostSocket != webMemif().HostSocket || got.PodName != "web" || !got.AllocatedAt.AsTime().Equal(allocatedAt) {
				t.Errorf("allocation = %v, want the web pod's memif", got)
			}
		})
	}
}

func TestGetPodMemifs(t *testing.T) {
	devices := devicemanagerstandin.New()
	devices.Allocate(webMemif())
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
	devices := devicemanagerstandin.New()
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
	unbound := webMemif()
	unbound.Pod, unbound.PodUID, unbound.ContainerName = podapi.PodID{}, "", ""
	devices.Allocate(unbound)
	devices.Allocate(webMemif())
	devices.Release("alloc-1")

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
		if change.Kind != wantKind || change.Allocation.AllocationId != "alloc-1" || change.Allocation.Secret != "" {
			t.Errorf("change %d = %v, want %v of alloc-1 without secret", i, change, wantKind)
		}
	}
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("after cancel: %v, want Canceled", err)
	}
}

func TestGetEventHistory(t *testing.T) {
	history := historyRecords{
		{Seq: 1, Name: "FullResync", Method: "full-resync", StartedAt: allocatedAt, FinishedAt: allocatedAt},
		{Seq: 2, Name: "AddPod", Description: "AddPod default/web (uid uid-web)", Method: "update",
			Handlers: []server.HandlerRecord{{Handler: "memifwiring", Action: "update", Error: "vswitch down"}},
			Error:    "vswitch down"},
		{Seq: 3, Name: "DeletePod", Method: "update"},
	}
	client := startAPI(t, devicemanagerstandin.New(), history, server.Config{})
	for _, tc := range []struct {
		name     string
		req      *memifv1.GetEventHistoryRequest
		wantSeqs []uint64
	}{
		{"all", &memifv1.GetEventHistoryRequest{}, []uint64{1, 2, 3}},
		{"since 1", &memifv1.GetEventHistoryRequest{SinceSeq: 1}, []uint64{2, 3}},
		{"last 1", &memifv1.GetEventHistoryRequest{Last: 1}, []uint64{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.GetEventHistory(t.Context(), tc.req)
			if err != nil {
				t.Fatalf("GetEventHistory: %v", err)
			}
			var seqs []uint64
			for _, event := range resp.Events {
				seqs = append(seqs, event.Seq)
				if event.Seq == 2 && (event.Error != "vswitch down" || event.Handlers[0].Error != "vswitch down") {
					t.Errorf("event 2 = %v, want its handler error", event)
				}
			}
			if len(seqs) != len(tc.wantSeqs) || (len(seqs) > 0 && seqs[0] != tc.wantSeqs[0]) {
				t.Errorf("seqs = %v, want %v", seqs, tc.wantSeqs)
			}
		})
	}
}

func TestGetEventHistoryWithoutHistoryIsUnavailable(t *testing.T) {
	client := startAPI(t, devicemanagerstandin.New(), nil, server.Config{})
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
			if tc.wantGID >= 0 && os.Geteuid() != 0 {
				t.Skip("giving a socket to another group needs root")
			}
			path := filepath.Join(t.TempDir(), "run", "api.sock")
			startAPI(t, devicemanagerstandin.New(), nil, server.Config{SocketPath: path, SocketMode: tc.mode, SocketGroup: tc.group})
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
	_, err := server.Start(server.Config{SocketPath: path, SocketGroup: "no-such-group-here"}, server.NewService(devicemanagerstandin.New(), nil, 0))
	if err == nil || !strings.Contains(err.Error(), `API socket group "no-such-group-here"`) {
		t.Errorf("Start with an unknown group = %v, want an error naming the group", err)
	}
}

func TestListenUnixSocketLeftovers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr bool
	}{
		{"nothing there", func(*testing.T, string) {}, false},
		{"stale socket of a previous run", leaveStaleSocket, false},
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
			listener, err := server.ListenUnix(path, 0o600, server.NoGroup)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ListenUnix = %v, want error: %v", err, tc.wantErr)
			}
			if listener != nil {
				listener.Close()
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
