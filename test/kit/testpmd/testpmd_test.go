package testpmd_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/syncbuffer"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
)

// requireTestpmd fails the test with what to do when testpmd cannot run.
func requireTestpmd(t *testing.T) {
	t.Helper()
	needs.Root(t, "testpmd's memif (its DPDK runtime directory)")
	if _, err := exec.LookPath(testpmd.Binary); err != nil {
		t.Fatalf("%s not found (%v): run scripts/install-deps.sh", testpmd.Binary, err)
	}
}

// vswitchSetup is what a test of a vswitch side needs: testpmd, a context
// bounding its waits, and a directory for the memif socket and logs.
func vswitchSetup(t *testing.T) (ctx context.Context, dir, socket string) {
	t.Helper()
	requireTestpmd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	dir = t.TempDir()
	return ctx, dir, filepath.Join(dir, "memif.sock")
}

// startPodSide runs the pod-side command on the host, with the envs a
// container would get from kubelet.
func startPodSide(t *testing.T, socket, secret string) (*exec.Cmd, *syncbuffer.Buffer) {
	t.Helper()
	command := testpmd.PodCommand()
	cmd := exec.Command(command[0], command[1:]...)
	runtimeDir, err := os.MkdirTemp("", "testpmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runtimeDir) })
	cmd.Env = append(os.Environ(), "MEMIF_SOCKET="+socket, "MEMIF_SECRET="+secret, testpmd.RuntimeDirEnv+"="+runtimeDir)
	output := &syncbuffer.Buffer{}
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pod side: %v", err)
	}
	return cmd, output
}

// stopPodSide stops the pod side as a container runtime does (SIGTERM) and
// checks that it exits: with status 0, or killed by SIGSEGV, which DPDK's
// testpmd can hit in its own port teardown on the way out (once in 30 runs
// under load). That crash is logged: it is DPDK's, after the memif served.
func stopPodSide(t *testing.T, cmd *exec.Cmd, output *syncbuffer.Buffer) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGSEGV:
		t.Logf("pod side crashed in DPDK's teardown after SIGTERM: %v; output ends with %q", err, tail(output.String()))
	default:
		t.Errorf("pod side did not exit cleanly after SIGTERM: %v; output ends with %q", err, tail(output.String()))
	}
}

func tail(s string) string {
	if len(s) > 600 {
		return s[len(s)-600:]
	}
	return s
}

func waitFor(ctx context.Context, condition func() bool) bool {
	for !condition() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

func TestMemifLinkBetweenVswitchAndPodSide(t *testing.T) {
	cases := []struct {
		name          string
		podSecret     string
		wantLinkUp    bool
		wantPodOutput string
	}{
		{name: "right secret", podSecret: "Zm9vYmFyLXNlY3JldC0xMjM", wantLinkUp: true, wantPodOutput: "Connected"},
		{name: "wrong secret", podSecret: "d3Jvbmctc2VjcmV0", wantLinkUp: false, wantPodOutput: "Incorrect secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, dir, socket := vswitchSetup(t)
			vswitch, err := testpmd.StartVswitch(ctx, testpmd.VswitchConfig{
				Socket: socket, Secret: "Zm9vYmFyLXNlY3JldC0xMjM", LogPath: filepath.Join(dir, "vswitch.log"),
			})
			if err != nil {
				t.Fatal(err)
			}
			podSide, podOutput := startPodSide(t, socket, tc.podSecret)
			// Stop the vswitch side first: its memif server can crash when
			// the client leaves under traffic.
			defer stopPodSide(t, podSide, podOutput)
			defer func() {
				if err := vswitch.Stop(); err != nil {
					t.Errorf("stop vswitch: %v", err)
				}
			}()

			if !waitFor(ctx, func() bool { return strings.Contains(podOutput.String(), tc.wantPodOutput) }) {
				t.Fatalf("pod side never printed %q; its output ends with %q", tc.wantPodOutput, tail(podOutput.String()))
			}
			if !tc.wantLinkUp {
				up, err := vswitch.LinkUp(ctx)
				if err != nil || up {
					t.Fatalf("vswitch link up = %v (err %v) after the pod side was refused, want down", up, err)
				}
				return
			}
			if err := vswitch.WaitLinkUp(ctx); err != nil {
				t.Fatal(err)
			}
			stats, err := vswitch.WaitReceiving(ctx)
			if err != nil {
				t.Fatalf("vswitch received no packet from the pod side: %v", err)
			}
			// The pod side counts what it sent in its own output, as kubectl
			// logs shows it.
			var printed testpmd.PodStats
			if !waitFor(ctx, func() bool {
				stats, found := testpmd.ParsePodStats(podOutput.String())
				printed = stats
				return found && stats.TxPackets > 0 && stats.TxPPS > 0
			}) {
				t.Fatalf("pod side printed no sent packets (last %+v); its output ends with %q", printed, tail(podOutput.String()))
			}
			t.Logf("%s: %d packets received; the pod side printed %+v", vswitch, stats.RxPackets, printed)
		})
	}
}

// TestTelemetryAnswersEveryConcurrentReader: DPDK's telemetry serves 10
// clients at a time and closes the others unanswered; every read of the
// counters still gets its answer.
func TestTelemetryAnswersEveryConcurrentReader(t *testing.T) {
	ctx, dir, socket := vswitchSetup(t)
	vswitch, err := testpmd.StartVswitch(ctx, testpmd.VswitchConfig{
		Socket: socket, Secret: "c2VjcmV0", LogPath: filepath.Join(dir, "vswitch.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := vswitch.Stop(); err != nil {
			t.Errorf("stop vswitch: %v", err)
		}
	}()
	const readers = 40
	errs := make(chan error, readers)
	for range readers {
		go func() {
			_, err := vswitch.Stats(ctx)
			errs <- err
		}()
	}
	for range readers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestPodSideConnectingAtOnceGetsTheLink: a pod side that connects the
// moment the vswitch's socket appears, as the cluster's pods do, gets its
// link. DPDK's memif server refuses clients until its port is started and
// its client does not try again, so the socket must not appear before.
func TestPodSideConnectingAtOnceGetsTheLink(t *testing.T) {
	ctx, dir, socket := vswitchSetup(t)
	started := make(chan *testpmd.Vswitch, 1)
	startErr := make(chan error, 1)
	go func() {
		vswitch, err := testpmd.StartVswitch(ctx, testpmd.VswitchConfig{
			Socket: socket, Secret: "c2VjcmV0", LogPath: filepath.Join(dir, "vswitch.log"),
		})
		started <- vswitch
		startErr <- err
	}()
	if !waitFor(ctx, func() bool {
		_, err := os.Stat(socket)
		return err == nil
	}) {
		t.Fatalf("no socket at %s: %v", socket, ctx.Err())
	}
	podSide, podOutput := startPodSide(t, socket, "c2VjcmV0")
	defer stopPodSide(t, podSide, podOutput)
	vswitch, err := <-started, <-startErr
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := vswitch.Stop(); err != nil {
			t.Errorf("stop vswitch: %v", err)
		}
	}()
	if err := vswitch.WaitLinkUp(ctx); err != nil {
		t.Fatalf("%v; the pod side's output ends with %q", err, tail(podOutput.String()))
	}
}

func TestStartVswitchReportsAProbeFailure(t *testing.T) {
	requireTestpmd(t)
	dir := t.TempDir()
	_, err := testpmd.StartVswitch(context.Background(), testpmd.VswitchConfig{
		Socket:  filepath.Join(dir, "no-such-dir", "memif.sock"),
		Secret:  "s",
		LogPath: filepath.Join(dir, "vswitch.log"),
	})
	if err == nil || !strings.Contains(err.Error(), "could not make a memif port") {
		t.Fatalf("StartVswitch on a socket in a missing directory: err = %v, want one saying the memif port was not made", err)
	}
}

// TestRuntimeDirectoriesAreRemoved: DPDK's runtime files (telemetry and
// multi-process sockets, config) of both sides live in temporary
// directories of their own while testpmd runs, never in the host's
// /var/run/dpdk, and are gone once the sides stop.
func TestRuntimeDirectoriesAreRemoved(t *testing.T) {
	ctx, dir, socket := vswitchSetup(t)
	vswitch, err := testpmd.StartVswitch(ctx, testpmd.VswitchConfig{
		Socket: socket, Secret: "c2VjcmV0", LogPath: filepath.Join(dir, "vswitch.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	podSide, podOutput := startPodSide(t, socket, "c2VjcmV0")
	if err := vswitch.WaitLinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	ownDir := filepath.Join(vswitch.RuntimeDir(), "dpdk", vswitch.FilePrefix())
	if _, err := os.Stat(filepath.Join(ownDir, "dpdk_telemetry.v2")); err != nil {
		t.Errorf("vswitch's telemetry socket is not in its own runtime directory %s: %v", ownDir, err)
	}
	for _, prefix := range []string{vswitch.FilePrefix(), "pod"} {
		if _, err := os.Lstat(filepath.Join("/var/run/dpdk", prefix)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/var/run/dpdk/%s exists (%v): testpmd wrote to the host's runtime directory", prefix, err)
		}
	}
	if err := vswitch.Stop(); err != nil {
		t.Errorf("stop vswitch: %v", err)
	}
	stopPodSide(t, podSide, podOutput)
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("vswitch's memif socket %s is left after Stop (%v)", socket, err)
	}
	if _, err := os.Lstat(vswitch.RuntimeDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("vswitch's runtime directory %s is left after Stop (%v)", vswitch.RuntimeDir(), err)
	}
}
