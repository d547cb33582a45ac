package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/otheruser"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

// The hostile local user of these tests is a user ID with no entry in
// /etc/passwd (none is needed to run as it), unique per test process so
// that parallel runs on the machine do not share it.
var attackerID = 60000 + os.Getpid()%5000

// raceDurationEnv sets how long TestSymlinkRaceChangesNothingOutsideTheRoot
// races: short by default, for make test; the figure is 60s:
// MEMIF_RACE_SECONDS=60 go test -run TestSymlinkRace ./faults
const raceDurationEnv = "MEMIF_RACE_SECONDS"

// helperEnv, set, makes the test binary a helper (runHelper) instead of
// running tests.
const helperEnv = "MEMIF_FAULTS_HELPER"

// runRacer is the hostile user's side: for the given time, it moves each
// allocation directory under root away and puts a link to victim in its
// place, then puts it back, so that an agent following a path would chmod,
// chown or fill victim instead. It prints how many times it swapped.
func runRacer(root, victim string, duration time.Duration) {
	swaps := 0
	for deadline := time.Now().Add(duration); time.Now().Before(deadline); {
		entries, _ := os.ReadDir(root)
		var swapped []string
		for _, entry := range entries {
			name := filepath.Join(root, entry.Name())
			if !strings.HasPrefix(entry.Name(), "memif-") || strings.HasSuffix(entry.Name(), ".moved") || !entry.IsDir() {
				continue
			}
			if os.Rename(name, name+".moved") == nil {
				os.Symlink(victim, name)
				swapped = append(swapped, name)
			}
		}
		time.Sleep(time.Millisecond) // let the agent meet the links
		for _, name := range swapped {
			os.Remove(name)
			os.Rename(name+".moved", name)
		}
		swaps += len(swapped)
	}
	fmt.Println(swaps)
}

// helper is the test binary run as a helper process (runHelper).
type helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// startHelper runs the test binary as a helper given spec, as the hostile
// user when asUser; the binary is copied where that user may run it.
func startHelper(t *testing.T, spec string, asUser bool) *helper {
	t.Helper()
	binaryPath := otheruser.TestBinary(t, "helper")
	h := &helper{cmd: exec.Command(binaryPath)}
	h.cmd.Env = []string{helperEnv + "=" + spec}
	h.cmd.Stderr = os.Stderr
	if asUser {
		h.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(attackerID), Gid: uint32(attackerID)}}
	}
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdout = bufio.NewReader(stdout)
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.stdin.Close()
		h.cmd.Process.Kill()
		h.cmd.Wait()
	})
	return h
}

// line returns the next line the helper printed.
func (h *helper) line(t *testing.T) string {
	t.Helper()
	text, err := h.stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("helper %v printed %q: %v", h.cmd.Env, text, err)
	}
	return strings.TrimSpace(text)
}

// release closes the helper's stdin, which ends a holder.
func (h *helper) release() { h.stdin.Close() }

// runHelper is the test binary started by startHelper: "race ROOT VICTIM
// DURATION" races as the hostile user (runRacer); "hold ADDR COUNT" opens
// up to COUNT idle connections to ADDR, prints how many, and holds them
// until its stdin closes (each process has its own descriptor limit).
func runHelper(spec string) {
	args := strings.Fields(spec)
	switch args[0] {
	case "race":
		duration, _ := time.ParseDuration(args[3])
		runRacer(args[1], args[2], duration)
	case "hold":
		count, _ := strconv.Atoi(args[2])
		conns := holdIdleConnections(args[1], count)
		fmt.Println(len(conns))
		io.Copy(io.Discard, os.Stdin)
	}
}

// fileState is what the race must not change about a file.
type fileState struct {
	mode     os.FileMode
	uid, gid uint32
	content  string
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	state := fileState{mode: info.Mode(), uid: st.Uid, gid: st.Gid}
	if info.Mode().IsRegular() {
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		state.content = string(content)
	} else if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, entry := range entries {
			state.content += entry.Name() + "\n"
		}
	}
	return state
}

// TestSymlinkRaceChangesNothingOutsideTheRoot gives the hostile user what
// a configured dir-group gives: the socket root and the allocation
// directories are writable by its group. While it swaps allocation
// directories for links to a root-owned directory, resyncs (which re-make
// every directory and set its mode and group) and Allocates run. Nothing
// outside the root changes: not the directory, not the file in it.
func TestSymlinkRaceChangesNothingOutsideTheRoot(t *testing.T) {
	duration := 3 * time.Second
	if text := os.Getenv(raceDurationEnv); text != "" {
		seconds, err := strconv.Atoi(text)
		if err != nil {
			t.Fatalf("%s=%q: want seconds", raceDurationEnv, text)
		}
		duration = time.Duration(seconds) * time.Second
	}
	// Not t.TempDir: its parent lets only root through.
	base, err := os.MkdirTemp("", "race")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "memif")
	if err := os.Mkdir(root, 0o770); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, 0, attackerID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o770); err != nil { // Mkdir's mode was cut by the umask
		t.Fatal(err)
	}
	victim := filepath.Join(base, "victim")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "file"), []byte("root's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := map[string]fileState{victim: stateOf(t, victim), filepath.Join(victim, "file"): stateOf(t, filepath.Join(victim, "file"))}

	a := agenttest.New(t, agenttest.Setup{SocketRoot: root, DeviceManager: fmt.Sprintf("dir-group: \"%d\"\n", attackerID)})
	a.Args = []string{"-http-allow-changes"}
	a.Start()
	client := a.PluginClient()
	for n := range 8 {
		if _, err := allocate(context.Background(), client, deviceID(n)); err != nil {
			t.Fatalf("Allocate: %v", err)
		}
	}
	racer := startHelper(t, fmt.Sprintf("race %s %s %s", root, victim, duration), true)
	resyncs, allocates := 0, 0
	for deadline := time.Now().Add(duration); time.Now().Before(deadline); resyncs++ {
		response, err := http.Post("http://"+a.HTTPAddr+"/controller/resync", "application/json", nil)
		if err != nil {
			t.Fatalf("POST /controller/resync: %v", err)
		}
		response.Body.Close()
		if allocates < 56 {
			if _, err := allocate(context.Background(), client, deviceID(8+allocates)); err == nil {
				allocates++
			}
		}
	}
	swaps := racer.line(t)
	t.Logf("%s swaps by the hostile user during %d resyncs and %d Allocates in %s", swaps, resyncs, allocates, duration)
	if swaps == "0" {
		t.Fatal("the hostile user swapped no directory: the race tested nothing")
	}
	for path, want := range before {
		if got := stateOf(t, path); got != want {
			t.Errorf("%s changed during the race: %+v, was %+v", path, got, want)
		}
	}
	// The links are gone: a resync succeeds and the agent is ready again.
	a.Resync()
	a.RequireHealthy()
}

// TestUnsafeDirectoriesRefused: a socket root or checkpoint directory
// another user can write to is refused, with a message naming the path,
// its owner and mode: every Allocate for a socket root, the agent's start
// for a checkpoint directory (the networks' state beside the checkpoint
// cannot be kept there, so the agent stops instead of wiring memifs whose
// addresses it could lose); a link the hostile user put in the checkpoint
// directory in place of the journal gets nothing.
func TestUnsafeDirectoriesRefused(t *testing.T) {
	cases := []struct {
		name         string
		stopsAtStart bool
		prepare      func(t *testing.T, a *agenttest.Agent) (dir string, attackerFile string)
	}{
		{"world-writable socket root", false, func(t *testing.T, a *agenttest.Agent) (string, string) {
			if err := os.MkdirAll(a.SocketRoot, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(a.SocketRoot, 0o777); err != nil {
				t.Fatal(err)
			}
			return a.SocketRoot, ""
		}},
		{"world-writable checkpoint directory with a linked journal", true, func(t *testing.T, a *agenttest.Agent) (string, string) {
			dir := filepath.Dir(a.CheckpointPath)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			theirs := filepath.Join(t.TempDir(), "theirs")
			if err := os.WriteFile(theirs, nil, 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(theirs, attackerID, attackerID); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(theirs, a.CheckpointPath+".journal"); err != nil {
				t.Fatal(err)
			}
			return dir, theirs
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := agenttest.New(t, agenttest.Setup{})
			dir, theirs := tc.prepare(t, a)
			a.Launch() // never ready: its resyncs fail on the directory
			names := func(text string) bool {
				return strings.Contains(text, dir) && strings.Contains(text, "with mode 0777") && strings.Contains(text, "owned by uid 0")
			}
			if tc.stopsAtStart {
				if err := a.WaitExit(); err == nil {
					t.Errorf("the agent exited with status 0 on %s; want it refused", dir)
				}
				if !names(a.Log()) {
					t.Errorf("the agent stopped without naming %s, its owner and mode:\n%s", dir, a.LogTail(20))
				}
			} else {
				poll.Until(t, waitTimeout, "Allocate refused naming "+dir+", its owner and mode", func() error {
					_, err := allocate(context.Background(), a.PluginClient(), deviceID(0))
					if err == nil || !names(err.Error()) {
						return fmt.Errorf("Allocate: %v", err)
					}
					return nil
				})
			}
			if theirs != "" {
				if content, err := os.ReadFile(theirs); err != nil || len(content) != 0 {
					t.Errorf("the hostile user's file got %d bytes (%v); want nothing written through the link", len(content), err)
				}
			}
		})
	}
}

// TestHTTPFloodsLeaveAllocateAnswering holds 20,000 idle connections to
// the HTTP port (the agent's descriptor limit is 20,000 here) and floods
// it with resyncs and scheduler history requests: Allocate still answers,
// and once the connections are gone, so do the probes.
func TestHTTPFloodsLeaveAllocateAnswering(t *testing.T) {
	a := agenttest.New(t, agenttest.Setup{})
	a.Args = []string{"-http-allow-changes"}
	a.Start()
	// Two processes of 10,000 connections each: a process may open 20,000
	// descriptors here, and cannot raise that.
	var holders []*helper
	for range 2 {
		holders = append(holders, startHelper(t, fmt.Sprintf("hold %s %d", a.HTTPAddr, 10000), false))
	}
	for _, holder := range holders {
		t.Logf("a holder opened %s of its 10,000 idle connections (the rest wait in, or were dropped from, the kernel's accept queue)", holder.line(t))
	}
	var flood sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for n := range 200 {
		flood.Go(func() {
			var response *http.Response
			var err error
			if n%2 == 0 {
				response, err = client.Post("http://"+a.HTTPAddr+"/controller/resync", "application/json", nil)
			} else {
				response, err = client.Get("http://" + a.HTTPAddr + "/scheduler/txn-history")
			}
			if err == nil {
				io.Copy(io.Discard, response.Body)
				response.Body.Close()
			}
		})
	}
	// A generous deadline on the call itself, not a measured time.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := allocate(ctx, a.PluginClient(), deviceID(0)); err != nil {
		t.Fatalf("Allocate while the HTTP port is flooded: %v", err)
	}
	t.Logf("Allocate answered in %s during the flood (reported, not asserted)", time.Since(start))
	flood.Wait()
	for _, holder := range holders {
		holder.release()
	}
	poll.Until(t, waitTimeout, "the probes answer again", func() error {
		if code, _, err := a.Get("/readiness"); err != nil || code != http.StatusOK {
			return fmt.Errorf("readiness: %d, %v", code, err)
		}
		return nil
	})
}

// holdIdleConnections opens up to count connections to addr that send
// nothing; it returns those that were accepted by the kernel in time.
func holdIdleConnections(addr string, count int) []net.Conn {
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	dialer := net.Dialer{Timeout: 200 * time.Millisecond}
	next := make(chan struct{}, count)
	for range count {
		next <- struct{}{}
	}
	close(next)
	for range 500 {
		wg.Go(func() {
			for range next {
				conn, err := dialer.Dial("tcp", addr)
				if err != nil {
					continue
				}
				mu.Lock()
				conns = append(conns, conn)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return conns
}
