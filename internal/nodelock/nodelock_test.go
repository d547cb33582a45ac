package nodelock_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/nodelock"
)

// holderEnv makes the test binary a process that takes the lock at its
// value, says so on stdout and sleeps until killed.
const holderEnv = "NODELOCK_TEST_HOLD"

// heldLock keeps the holder process's lock reachable.
var heldLock *nodelock.Lock

func TestMain(m *testing.M) {
	if path := os.Getenv(holderEnv); path != "" {
		var err error
		if heldLock, err = nodelock.Acquire(path, 0, nil); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("held")
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

func TestAcquire(t *testing.T) {
	const wait = 2 * time.Second
	for _, tc := range []struct {
		name string
		// held: the test holds the lock first, and releases it after
		// releaseAfter (0: at the end).
		held         bool
		releaseAfter time.Duration
		// leftOver: a file an earlier agent left, mode 0644 and a longer
		// holder line than this process writes.
		leftOver bool
		wantErr  bool
	}{
		{name: "free"},
		{name: "file left by an earlier agent", leftOver: true},
		{name: "released while waiting", held: true, releaseAfter: 300 * time.Millisecond},
		{name: "held all along", held: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state", "checkpoint.json.lock")
			if tc.leftOver {
				if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte("pid 4194304 on an-earlier-host-with-a-long-name since 2026-01-01T00:00:00Z\nmore\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.held {
				first, err := nodelock.Acquire(path, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.releaseAfter > 0 {
					timer := time.AfterFunc(tc.releaseAfter, func() { first.Release() })
					defer timer.Stop()
				} else {
					defer first.Release()
				}
			}
			var told []string
			lock, err := nodelock.Acquire(path, wait, func(holder string) { told = append(told, holder) })
			ownHolder := fmt.Sprintf("pid %d on ", os.Getpid())
			if tc.held && (len(told) != 1 || !strings.HasPrefix(told[0], ownHolder)) {
				t.Errorf("waiting was told %q, want once the holder %q…", told, ownHolder)
			}
			if !tc.held && len(told) != 0 {
				t.Errorf("waiting was told %q of a free lock", told)
			}
			if tc.wantErr {
				var held *nodelock.HeldError
				if !errors.As(err, &held) || held.Path != path || !strings.HasPrefix(held.Holder, ownHolder) || !strings.Contains(err.Error(), "one agent runs per node") {
					t.Fatalf("Acquire of a held lock = %v, want a HeldError naming %s and its holder", err, path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Release()
			info, err := os.Stat(path)
			if err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("lock file %v, %v; want mode 0600", info, err)
			}
			dirInfo, err := os.Stat(filepath.Dir(path))
			if err != nil || dirInfo.Mode().Perm() != 0o700 {
				t.Errorf("lock directory %v, %v; want mode 0700", dirInfo, err)
			}
			content, _ := os.ReadFile(path)
			if !strings.HasPrefix(string(content), ownHolder) || strings.Count(string(content), "\n") != 1 {
				t.Errorf("lock file holds %q, want one line naming this process", content)
			}
		})
	}
}

// The kernel drops the lock of a process that dies, even by SIGKILL: no
// stale lock stops the next agent.
func TestLockOfAKilledHolderIsFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.json.lock")
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), holderEnv+"="+path)
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	said := make([]byte, 5)
	if _, err := stdout.Read(said); err != nil || string(said) != "held\n" {
		holder.Process.Kill()
		t.Fatalf("holder process said %q, %v", said, err)
	}
	if _, err := nodelock.Acquire(path, 0, nil); err == nil {
		t.Fatal("the lock of a running holder process was taken")
	}
	holder.Process.Kill()
	holder.Wait()
	lock, err := nodelock.Acquire(path, 0, nil)
	if err != nil {
		t.Fatalf("after its holder was killed: %v", err)
	}
	lock.Release()
}

func TestAcquireRefusesADirectoryOthersCanChange(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := nodelock.Acquire(filepath.Join(dir, "checkpoint.json.lock"), 0, nil); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Acquire in a world-writable directory = %v, want an error naming it", err)
	}
}
