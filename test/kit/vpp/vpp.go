package vpp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/program"
)

const (
	// startLimit bounds VPP's start, up to its API socket answering.
	startLimit = 60 * time.Second
	// stopLimit bounds a clean exit after SIGTERM before SIGKILL.
	stopLimit = 10 * time.Second
	// pollInterval is how often a starting VPP is looked at.
	pollInterval = 20 * time.Millisecond
)

var prefixOnce struct {
	sync.Once
	prefix string
	err    error
}

// Prefix returns the VPP prefix scripts/vpp.sh provides, extracting it into
// the cache on first use.
func Prefix() (string, error) {
	prefixOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "vpp.sh")
		var stderr bytes.Buffer
		cmd := exec.Command("bash", script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			prefixOnce.err = fmt.Errorf("get VPP with %s: %w: %s", script, err, strings.TrimSpace(stderr.String()))
			return
		}
		prefixOnce.prefix = strings.TrimSpace(string(out))
	})
	return prefixOnce.prefix, prefixOnce.err
}

// VPP is a running VPP.
type VPP struct {
	// Prefix is where VPP's binaries are.
	Prefix string
	// Dir holds the sockets, startup.conf and VPP's log.
	Dir string
	// APISocket is the binary API socket (socksvr).
	APISocket string
	// CLISocket is vppctl's socket.
	CLISocket string

	// command wraps VPP's command line (LaunchOption InNamespace).
	command func(argv ...string) []string
	// plugins are enabled besides memif (LaunchOption Plugins).
	plugins []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// LaunchOption changes how Launch runs VPP.
type LaunchOption func(*VPP)

// InNamespace runs VPP through the command line wrap returns, such as a
// cluster node's (cluster.NodeArgv): VPP then creates the memif sockets the
// agent names at the paths the node's pods see. Dir must be reachable from
// both sides, and wrap must exec VPP so that its pid is VPP's.
func InNamespace(wrap func(argv ...string) []string) LaunchOption {
	return func(v *VPP) { v.command = wrap }
}

// Plugins enables VPP's plugins of these names besides memif, for example
// "ping" for the ping CLI; the runtime from scripts/vpp.sh also carries
// af_packet, vxlan and acl.
func Plugins(names ...string) LaunchOption {
	return func(v *VPP) { v.plugins = append(v.plugins, names...) }
}

// Require returns the VPP prefix, or skips the test when there is none
// (fails it under CI=true).
func Require(t testing.TB) string {
	t.Helper()
	needs.Root(t, "running VPP")
	prefix, err := Prefix()
	if err != nil {
		needs.Unavailable(t, "no VPP: %v", err)
	}
	return prefix
}

// Start starts a VPP for t and stops it when t ends.
func Start(t testing.TB, opts ...LaunchOption) *VPP {
	t.Helper()
	prefix := Require(t)
	// Unix socket paths hold 108 bytes: a short directory, not t.TempDir().
	dir, err := os.MkdirTemp("", "vpp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	v, err := Launch(prefix, dir, opts...)
	if v != nil {
		t.Cleanup(func() {
			if err := v.Stop(); err != nil {
				t.Errorf("stop VPP: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Launch starts VPP from prefix with its sockets, startup.conf and log in
// dir (keep its path short: socket paths hold 108 bytes). On an error
// after VPP started, the returned VPP is to be stopped.
func Launch(prefix, dir string, opts ...LaunchOption) (*VPP, error) {
	v := &VPP{Prefix: prefix, Dir: dir, APISocket: filepath.Join(dir, "api.sock"), CLISocket: filepath.Join(dir, "cli.sock")}
	for _, opt := range opts {
		opt(v)
	}
	if err := v.writeStartupConf(); err != nil {
		return nil, err
	}
	if err := v.start(); err != nil {
		return v, err
	}
	return v, nil
}

// pluginDir finds the memif plugin under prefix: the relocatable runtime
// keeps it in lib/vpp_plugins, Debian packages in lib/<triplet>/vpp_plugins.
func pluginDir(prefix string) (string, error) {
	candidates, _ := filepath.Glob(filepath.Join(prefix, "lib", "*", "vpp_plugins", "memif_plugin.so"))
	candidates = append([]string{filepath.Join(prefix, "lib", "vpp_plugins", "memif_plugin.so")}, candidates...)
	for _, candidate := range candidates {
		if _, err := os.Stat(candidate); err == nil {
			return filepath.Dir(candidate), nil
		}
	}
	return "", fmt.Errorf("no memif_plugin.so under %s/lib", prefix)
}

func (v *VPP) writeStartupConf() error {
	plugins, err := pluginDir(v.Prefix)
	if err != nil {
		return err
	}
	enabled := "plugin memif_plugin.so { enable }"
	for _, name := range v.plugins {
		plugin := name + "_plugin.so"
		if _, err := os.Stat(filepath.Join(plugins, plugin)); err != nil {
			return fmt.Errorf("enable VPP plugin %s: %w (scripts/vpp.sh's runtime carries memif, ping, af_packet, vxlan and acl)", name, err)
		}
		enabled += " plugin " + plugin + " { enable }"
	}
	random := make([]byte, 6)
	if _, err := rand.Read(random); err != nil {
		return err
	}
	conf := fmt.Sprintf(`unix { nodaemon cli-listen %[1]s/cli.sock }
api-segment { prefix memif-agent-test-%[2]s }
socksvr { socket-name %[1]s/api.sock }
plugins { path %[3]s plugin default { disable } %[4]s }
memory { main-heap-size 256M main-heap-page-size 4k }
buffers { buffers-per-numa 16384 page-size 4k }
statseg { socket-name %[1]s/stats.sock size 32M page-size 4k }
`, v.Dir, hex.EncodeToString(random), plugins, enabled)
	return os.WriteFile(filepath.Join(v.Dir, "startup.conf"), []byte(conf), 0o600)
}

// Pid is VPP's process id, 0 when it is not running.
func (v *VPP) Pid() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cmd == nil {
		return 0
	}
	return v.cmd.Process.Pid
}

// LogPath is VPP's output.
func (v *VPP) LogPath() string { return filepath.Join(v.Dir, "vpp.log") }

func (v *VPP) start() error {
	logFile, err := os.OpenFile(v.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	argv := []string{filepath.Join(v.Prefix, "bin", "vpp"), "-c", filepath.Join(v.Dir, "startup.conf")}
	if v.command != nil {
		argv = v.command(argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C reaches the owner, which stops VPP
	// after what uses it. SIGKILL when the owner dies without Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	exited := make(chan struct{})
	if err := program.StartAndWait(cmd, func(error) { close(exited) }); err != nil {
		return fmt.Errorf("start VPP from %s: %w", v.Prefix, err)
	}
	v.mu.Lock()
	v.cmd, v.exited = cmd, exited
	v.mu.Unlock()
	return v.waitReady(exited)
}

// waitReady waits until the API socket accepts connections.
func (v *VPP) waitReady(exited chan struct{}) error {
	deadline := time.Now().Add(startLimit)
	for {
		conn, err := net.Dial("unix", v.APISocket)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("VPP exited at start; %s ends with:\n%s", v.LogPath(), v.logTail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("VPP API socket %s not ready after %v: %w; see %s", v.APISocket, startLimit, err, v.LogPath())
		}
		time.Sleep(pollInterval)
	}
}

func (v *VPP) logTail() string {
	content, _ := os.ReadFile(v.LogPath())
	lines := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}

// Stop stops VPP (SIGTERM, then SIGKILL after stopLimit). It is safe to
// call more than once.
func (v *VPP) Stop() error {
	v.mu.Lock()
	cmd, exited := v.cmd, v.exited
	v.cmd = nil
	v.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-exited:
	case <-time.After(stopLimit):
		cmd.Process.Kill()
		<-exited
	}
	// VPP leaves its sockets behind; a restart must not find stale ones.
	for _, name := range []string{"api.sock", "cli.sock", "stats.sock"} {
		os.Remove(filepath.Join(v.Dir, name))
	}
	return nil
}

// Kill stops VPP with SIGKILL, as a crash would.
func (v *VPP) Kill(t testing.TB) {
	t.Helper()
	v.mu.Lock()
	cmd, exited := v.cmd, v.exited
	v.cmd = nil
	v.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
	for _, name := range []string{"api.sock", "cli.sock", "stats.sock"} {
		os.Remove(filepath.Join(v.Dir, name))
	}
}

// Restart stops VPP and starts it again with the same configuration: a
// fresh VPP with no interfaces.
func (v *VPP) Restart(t testing.TB) {
	t.Helper()
	if err := v.Stop(); err != nil {
		t.Fatalf("stop VPP: %v", err)
	}
	if err := v.start(); err != nil {
		t.Fatalf("restart VPP: %v", err)
	}
}

// CLI runs a vppctl command and returns its output.
func (v *VPP) CLI(t testing.TB, command ...string) string {
	t.Helper()
	out, err := v.RunCLI(t.Context(), command...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RunCLI runs a vppctl command and returns its output.
func (v *VPP) RunCLI(ctx context.Context, command ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append([]string{"-s", v.CLISocket}, command...)
	out, err := exec.CommandContext(ctx, filepath.Join(v.Prefix, "bin", "vppctl"), args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("vppctl %s: %w: %s", strings.Join(command, " "), err, out)
	}
	return string(out), nil
}

// Pause stops VPP with SIGSTOP, as a hung VPP: its sockets stay open and
// connected, and nothing it is sent is answered or done until Resume. t's
// end resumes it, so that Stop can stop it.
func (v *VPP) Pause(t testing.TB) {
	t.Helper()
	v.signal(t, syscall.SIGSTOP)
	t.Cleanup(func() { v.signal(t, syscall.SIGCONT) })
}

// Resume lets a paused VPP run again (SIGCONT): it then does what it was
// sent meanwhile.
func (v *VPP) Resume(t testing.TB) {
	t.Helper()
	v.signal(t, syscall.SIGCONT)
}

func (v *VPP) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	v.mu.Lock()
	cmd := v.cmd
	v.mu.Unlock()
	if cmd == nil {
		return
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("signal VPP %s: %v", sig, err)
	}
}
