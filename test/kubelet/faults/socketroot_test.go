package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

// TestSocketRootReadOnlyOrFull puts the socket root on a small tmpfs (in
// the test's private mount namespace) and makes it read-only, then full.
// kubelet's Allocate fails with an error that says which directory and
// why; the agent stays healthy, holds nothing for the refused pod, and
// serves the next pod once the directory is writable again.
func TestSocketRootReadOnlyOrFull(t *testing.T) {
	kubelet, podResources := startKubelet(t)
	a := agenttest.New(t, agenttest.Setup{DeviceCount: 8, PluginDir: kubelettest.PluginDir, PodResourcesSocket: podResources})
	mountSmallTmpfs(t, a.SocketRoot)
	a.Start()
	waitCapacity(t, kubelet, 8)

	cases := []struct {
		name     string
		break_   func(t *testing.T) (repair func())
		wantText string
	}{
		{"read-only", func(t *testing.T) func() {
			remount(t, a.SocketRoot, syscall.MS_RDONLY)
			return func() { remount(t, a.SocketRoot, 0) }
		}, "read-only file system"},
		{"full", func(t *testing.T) func() { return fill(t, a.SocketRoot) }, "no space left on device"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := list(t, a)
			repair := tc.break_(t)
			pod := kubelettest.NewPod(fmt.Sprintf("refused-%d", i), resource, 1)
			err := kubelet.AllocatePod(context.Background(), pod)
			if err == nil || !strings.Contains(err.Error(), tc.wantText) || !strings.Contains(err.Error(), a.SocketRoot) {
				t.Fatalf("kubelet admitted a pod with the socket root %s: %v; want an error naming the directory and %q", tc.name, err, tc.wantText)
			}
			t.Logf("kubelet: %v", err)
			a.RequireHealthy()
			if after := list(t, a); len(after) != len(before) {
				t.Fatalf("a refused Allocate changed the allocations from %d to %d", len(before), len(after))
			}

			repair()
			pod = kubelettest.NewPod(fmt.Sprintf("served-%d", i), resource, 1)
			if err := kubelet.AllocatePod(context.Background(), pod); err != nil {
				t.Fatalf("Allocate once the socket root is writable again: %v", err)
			}
			options, err := kubelet.ContainerOptions(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			dir := options["c0"].Mounts[0].HostPath
			if info, err := os.Stat(dir); err != nil || !info.IsDir() {
				t.Fatalf("directory %s of the pod admitted after the repair: %v", dir, err)
			}
			a.RequireHealthy()
		})
	}
}

// mountSmallTmpfs mounts a tmpfs of 1 MiB and 16 inodes at dir, unmounted
// when the test ends.
func mountSmallTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m,nr_inodes=16,mode=0700"); err != nil {
		t.Fatalf("mount a tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

func remount(t *testing.T, dir string, flags uintptr) {
	t.Helper()
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV|flags, ""); err != nil {
		t.Fatalf("remount %s: %v", dir, err)
	}
}

// fill uses up the filesystem at dir, inodes and blocks, and returns what
// frees it again.
func fill(t *testing.T, dir string) (free func()) {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	if err := os.Mkdir(filler, 0o700); err != nil {
		t.Fatalf("make %s: %v", filler, err)
	}
	free = func() {
		if err := os.RemoveAll(filler); err != nil {
			t.Fatalf("free %s: %v", dir, err)
		}
	}
	block := make([]byte, 64<<10)
	for n := 0; ; n++ {
		file, err := os.Create(filepath.Join(filler, fmt.Sprint(n)))
		if errors.Is(err, syscall.ENOSPC) {
			return free
		}
		if err != nil {
			t.Fatalf("fill %s: %v", dir, err)
		}
		for err == nil {
			_, err = file.Write(block)
		}
		file.Close()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("fill %s: %v", dir, err)
		}
	}
}
