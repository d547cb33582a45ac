package manager_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// floodFiles is how many files a hostile pod leaves in its directory.
const floodFiles = 20000

// flood fills dir with files files, and a subdirectory.
func flood(dir string, files int) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for i := range files {
		if err := unix.Mknodat(fd, fmt.Sprintf("f%07d", i), unix.S_IFREG|0o600, 0); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755)
}

// TestFloodedDirectoryDelaysOnlyItself: the directory of a pod that had
// filled its /run/vpp was removed on the event loop, so every other pod's
// Allocate on the node waited for its files to go (500,000 on tmpfs: one
// Allocate took 4.6 s against 8 ms). Now the loop moves the directory
// aside and the remover empties it: while its removal is held in
// progress, the pod's allocation is released, its path is free, and
// another pod's Allocate is answered.
func TestFloodedDirectoryDelaysOnlyItself(t *testing.T) {
	cfg := testConfig(t)
	removing := make(chan string, 1)
	unblock := make(chan struct{})
	a := startAgentSetUp(t, cfg, manager.Options{Log: testlog.New(t)}, func(dm *manager.Manager) {
		manager.SetBeforeRemove(dm, func(name string) {
			select {
			case removing <- name:
			default:
			}
			<-unblock
		})
	})
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	t.Cleanup(release) // before the agent stops

	response, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	flooded := response.ContainerResponses[0].Mounts[0].HostPath
	if err := flood(flooded, floodFiles); err != nil {
		t.Fatal(err)
	}
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "hostile", Name: "flooder"}, UID: "f"}
	push(t, a, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{flooded}}}})
	if err := a.loop.PushEvent(&podapi.DeletePod{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	var entry string
	select {
	case entry = <-removing:
	case <-time.After(waitLimit):
		t.Fatal("the flooded directory's removal never started")
	}

	if _, err := allocate(a, []string{"memif-001"}); err != nil {
		t.Fatalf("another pod's Allocate while the flooded directory is being removed: %v", err)
	}
	if held := a.dm.ListAllocations(); len(held) != 1 || held[0].DeviceIDs[0] != "memif-001" {
		t.Errorf("allocations held: %v, want only the other pod's: the flooder's released at once", held)
	}
	if _, err := os.Lstat(flooded); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the flooded directory's path: %v, want it free", err)
	}
	trash := filepath.Join(cfg.SocketRoot, manager.TrashName)
	if left, err := os.ReadDir(filepath.Join(trash, entry)); err != nil || len(left) != floodFiles+1 {
		t.Errorf("the flooded directory in the trash holds %d entries (%v), want all %d: the removal is still held", len(left), err, floodFiles+1)
	}

	release()
	poll.Until(t, waitLimit, "the trash emptied", func() error {
		left, err := os.ReadDir(trash)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("the trash holds %d entries", len(left))
		}
		return nil
	})
}

// TestTrashLeftByAStopEmptied: what a crash or a stop left in the trash
// (a directory partly emptied) is removed once the manager starts.
func TestTrashLeftByAStopEmptied(t *testing.T) {
	cfg := testConfig(t)
	left := filepath.Join(cfg.SocketRoot, manager.TrashName, "memif-000-left.0123456789abcdef")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := flood(left, 100); err != nil {
		t.Fatal(err)
	}
	startAgent(t, cfg, nil)
	poll.Until(t, waitLimit, "the trash emptied", func() error {
		entries, err := os.ReadDir(filepath.Join(cfg.SocketRoot, manager.TrashName))
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			return fmt.Errorf("the trash holds %d entries", len(entries))
		}
		return nil
	})
}
