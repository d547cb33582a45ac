package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/testutil/devicemanagerstandin"
	devapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

var testStart = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func memif(id, namespace, pod, container, secret string, devices ...string) devapi.MemifInfo {
	info := devapi.MemifInfo{
		AllocationID:    id,
		DeviceIDs:       devices,
		HostDir:         "/var/run/contiv/memif/" + id,
		HostSocket:      "/var/run/contiv/memif/" + id + "/memif.sock",
		ContainerSocket: "/run/vpp/memif.sock",
		Secret:          secret,
		AllocatedAt:     testStart,
	}
	if pod != "" {
		info.Pod = podapi.PodID{Namespace: namespace, Name: pod}
		info.PodUID = "uid-" + pod
		info.ContainerName = container
	}
	return info
}

// eventHistory is a fixed history standing in for the controller's.
type eventHistory []server.EventRecord

func (h eventHistory) EventHistory(query server.HistoryQuery) []server.EventRecord {
	var out []server.EventRecord
	for _, rec := range h {
		if rec.Seq > query.SinceSeq {
			out = append(out, rec)
		}
	}
	if query.Last > 0 && len(out) > query.Last {
		out = out[len(out)-query.Last:]
	}
	return out
}

var testHistory = eventHistory{
	{Seq: 1, Name: "StartupResync", Description: "StartupResync (full-resync)", Method: "full-resync",
		StartedAt: testStart, FinishedAt: testStart.Add(1500 * time.Microsecond), Committed: 2,
		Handlers: []server.HandlerRecord{{Handler: "devicemanager", Action: "resync"}}},
	{Seq: 2, Name: "AddPod", Description: "AddPod default/web (uid uid-web)", Method: "update",
		TxnType: "best-effort", Direction: "forward",
		StartedAt: testStart.Add(time.Second), FinishedAt: testStart.Add(time.Second + 3*time.Millisecond),
		Handlers: []server.HandlerRecord{
			{Handler: "devicemanager", Action: "update", Change: "bound alloc-1 to default/web"},
			{Handler: "memifwiring", Action: "update", Change: "put memif_default_web_app_0"},
		},
		Committed: 1,
		Error:     "commit 1 values of event AddPod: vswitch refused memif_default_web_app_0"},
}

// startAgentAPI serves the real node API over a temp Unix socket.
func startAgentAPI(t *testing.T, devices *devicemanagerstandin.DeviceManager, history server.EventHistory) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "api.sock")
	srv, err := server.Start(server.Config{SocketPath: socket}, server.NewService(devices, history, 0))
	if err != nil {
		t.Fatalf("start API: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close API: %v", err)
		}
	})
	return socket
}

func populatedDevices() *devicemanagerstandin.DeviceManager {
	devices := devicemanagerstandin.New()
	devices.Allocate(memif("alloc-1", "default", "web", "app", "s3cret-app", "memif-3"))
	devices.Allocate(memif("alloc-2", "default", "web", "sidecar", "s3cret-sidecar", "memif-4", "memif-5"))
	devices.Allocate(memif("alloc-3", "", "", "", "s3cret-unbound", "memif-7"))
	return devices
}

func runMemifctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestOutputMatchesGolden(t *testing.T) {
	socket := startAgentAPI(t, populatedDevices(), testHistory)
	emptySocket := startAgentAPI(t, devicemanagerstandin.New(), eventHistory{})
	for _, tc := range []struct {
		golden string
		socket string
		args   []string
	}{
		{"list", socket, []string{"list"}},
		{"list-secrets", socket, []string{"list", "--show-secrets"}},
		{"list-json", socket, []string{"-o", "json", "list"}},
		{"list-json-secrets", socket, []string{"list", "-o", "json", "--show-secrets"}},
		{"list-empty", emptySocket, []string{"list"}},
		{"list-empty-json", emptySocket, []string{"list", "-o", "json"}},
		{"get", socket, []string{"get", "default/web"}},
		{"get-secrets", socket, []string{"get", "default/web", "--show-secrets"}},
		{"get-json", socket, []string{"get", "-o", "json", "default/web"}},
		{"events", socket, []string{"events"}},
		{"events-last", socket, []string{"events", "--last", "1"}},
		{"events-json", socket, []string{"events", "-o", "json"}},
		{"events-empty", emptySocket, []string{"events"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			stdout, stderr, code := runMemifctl(t, append([]string{"--socket", tc.socket}, tc.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("memifctl %v: exit %d, stderr %q", tc.args, code, stderr)
			}
			checkGolden(t, tc.golden, stdout)
		})
	}
}

func TestWatchMatchesGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		// skipLines is how many lines come before the first change.
		skipLines int
	}{
		{"watch", []string{"watch"}, 1},
		{"watch-json", []string{"watch", "-o", "json"}, 0},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			devices := devicemanagerstandin.New()
			socket := startAgentAPI(t, devices, nil)
			ctx, cancel := context.WithCancel(t.Context())
			reader, writer := io.Pipe()
			exited := make(chan int, 1)
			go func() {
				exited <- run(ctx, append([]string{"--socket", socket}, tc.args...), writer, io.Discard)
				writer.Close()
			}()
			lines := bufio.NewScanner(reader)
			var got strings.Builder
			readLines(t, lines, &got, tc.skipLines)
			waitForWatcher(t, devices)

			devices.Allocate(memif("alloc-1", "", "", "", "s3cret", "memif-3"))
			devices.Allocate(memif("alloc-1", "default", "web", "app", "s3cret", "memif-3"))
			devices.Release("alloc-1")
			readLines(t, lines, &got, 3)
			cancel()
			go io.Copy(io.Discard, reader)
			if code := <-exited; code != exitOK {
				t.Errorf("watch interrupted: exit %d, want %d", code, exitOK)
			}
			checkGolden(t, tc.golden, got.String())
		})
	}
}

func readLines(t *testing.T, lines *bufio.Scanner, into *strings.Builder, n int) {
	t.Helper()
	for range n {
		if !lines.Scan() {
			t.Fatalf("watch output ended early: %v (so far %q)", lines.Err(), into.String())
		}
		into.WriteString(lines.Text() + "\n")
	}
}

// waitForWatcher waits until the watch is registered with the device
// manager, so that no change is made before it.
func waitForWatcher(t *testing.T, devices *devicemanagerstandin.DeviceManager) {
	t.Helper()
	for devices.Watchers() == 0 {
		if t.Context().Err() != nil {
			t.Fatal("watch never registered")
		}
		time.Sleep(time.Millisecond)
	}
}
