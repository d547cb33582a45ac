package dockerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/program"
)

// Binary is the dockerd executable Start runs.
const Binary = "dockerd"

// startTimeout bounds how long a daemon may take to answer its API. A cold
// start on a loaded two-core machine takes a few seconds.
const startTimeout = 90 * time.Second

// stopTimeout bounds a graceful stop before the daemon is killed; dockerd
// gives its containers 15 s to stop on SIGTERM.
const stopTimeout = 40 * time.Second

// Options tune a daemon. The zero value is what most tests want.
type Options struct {
	// StorageDriver forces a storage driver; empty tries overlay2, then vfs.
	StorageDriver string
	// ExtraArgs are appended to the dockerd command line (for example
	// "--live-restore").
	ExtraArgs []string
}

// Daemon is one private dockerd. Its methods are meant for the test
// goroutine; Stop and Restart must not run concurrently.
type Daemon struct {
	dir     string
	args    []string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	log     *os.File
}

// Start starts a private dockerd and stops it when tb ends. It skips the test
// (fails it under CI=true) when no daemon can run here.
func Start(tb testing.TB) *Daemon {
	tb.Helper()
	return StartWithOptions(tb, Options{})
}

// StartWithOptions is Start with options.
func StartWithOptions(tb testing.TB, opts Options) *Daemon {
	tb.Helper()
	requireDockerd(tb)
	// t.TempDir paths are long; a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "dkd")
	if err != nil {
		tb.Fatalf("create dockerd directory: %v", err)
	}
	daemon := &Daemon{dir: dir}
	tb.Cleanup(func() { daemon.cleanup(tb) })
	drivers := []string{opts.StorageDriver}
	if opts.StorageDriver == "" {
		drivers = []string{"overlay2", "vfs"}
	}
	var startErr error
	for _, driver := range drivers {
		daemon.args = daemon.commandLine(driver, opts.ExtraArgs)
		if startErr = daemon.start(); startErr == nil {
			return daemon
		}
		tb.Logf("dockerd with storage driver %s did not start: %v", driver, startErr)
	}
	needs.Unavailable(tb, "dockerd did not start: %v", startErr)
	return nil
}

// requireDockerd skips or fails tb when dockerd cannot run on this machine.
func requireDockerd(tb testing.TB) {
	tb.Helper()
	needs.Root(tb, "a private dockerd")
	if _, err := exec.LookPath(Binary); err != nil {
		needs.Unavailable(tb, "%s is not installed (run scripts/install-deps.sh): %v", Binary, err)
	}
}

func (d *Daemon) commandLine(driver string, extra []string) []string {
	args := []string{
		"--data-root", filepath.Join(d.dir, "data"),
		"--exec-root", filepath.Join(d.dir, "exec"),
		"-H", d.Endpoint(),
		"--pidfile", d.PIDFile(),
		"--bridge=none",
		"--iptables=false",
		"--ip-masq=false",
		"--storage-driver", driver,
	}
	return append(args, extra...)
}

// Dir is the daemon's private directory (data root, exec root, socket, log).
func (d *Daemon) Dir() string { return d.dir }

// Endpoint is the daemon's API endpoint, for docker.NewClient or DOCKER_HOST.
func (d *Daemon) Endpoint() string { return "unix://" + filepath.Join(d.dir, "docker.sock") }

// PIDFile is where the daemon writes its process ID.
func (d *Daemon) PIDFile() string { return filepath.Join(d.dir, "dockerd.pid") }

// LogPath is the daemon's combined stdout and stderr.
func (d *Daemon) LogPath() string { return filepath.Join(d.dir, "dockerd.log") }

// Client returns a new client of the daemon.
func (d *Daemon) Client(tb testing.TB) *docker.Client {
	tb.Helper()
	client, err := docker.NewClient(d.Endpoint())
	if err != nil {
		tb.Fatalf("create docker client for %s: %v", d.Endpoint(), err)
	}
	return client
}

// Restart stops the daemon and starts it again on the same roots. Containers
// stop with it unless the daemon runs with --live-restore.
func (d *Daemon) Restart(tb testing.TB) {
	tb.Helper()
	d.Stop(tb)
	d.StartAgain(tb)
}

// StartAgain starts a stopped daemon on the same roots.
func (d *Daemon) StartAgain(tb testing.TB) {
	tb.Helper()
	if err := d.start(); err != nil {
		tb.Fatalf("restart dockerd in %s: %v", d.dir, err)
	}
}

// Stop stops the daemon gracefully (SIGTERM, then SIGKILL after a timeout)
// and waits until its process has exited.
func (d *Daemon) Stop(tb testing.TB) {
	tb.Helper()
	if err := d.stop(); err != nil {
		tb.Fatalf("stop dockerd in %s: %v", d.dir, err)
	}
}

func (d *Daemon) start() error {
	if d.cmd != nil {
		return errors.New("dockerd is already running")
	}
	log, err := os.OpenFile(d.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open dockerd log: %w", err)
	}
	cmd := exec.Command(Binary, d.args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Own process group: a Ctrl-C of the test does not hit dockerd before
	// cleanup can stop it in order. A test process that dies without its
	// cleanup (killed, or go test's -timeout) takes dockerd with it: on
	// SIGTERM dockerd stops its containers and exits.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	exited := make(chan struct{})
	if err := program.StartAndWait(cmd, func(err error) {
		d.waitErr = err
		close(exited)
	}); err != nil {
		log.Close()
		return fmt.Errorf("run %s: %w", Binary, err)
	}
	d.cmd, d.log, d.exited = cmd, log, exited
	if err := d.waitReady(); err != nil {
		_ = d.stop()
		return fmt.Errorf("%w; log tail:\n%s", err, d.logTail())
	}
	return nil
}

// waitReady polls the API until it answers, the process exits or the start
// timeout passes.
func (d *Daemon) waitReady() error {
	client, err := docker.NewClient(d.Endpoint())
	if err != nil {
		return fmt.Errorf("create client for %s: %w", d.Endpoint(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		pingCtx, pingCancel := context.WithTimeout(ctx, time.Second)
		err := client.PingWithContext(pingCtx)
		pingCancel()
		if err == nil {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("dockerd exited before answering: %v", d.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("dockerd did not answer at %s within %s: %w", d.Endpoint(), startTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop signals the process this Daemon started (the one in its pid file)
// and waits for it.
func (d *Daemon) stop() error {
	if d.cmd == nil {
		return nil
	}
	defer func() {
		d.log.Close()
		d.cmd = nil
	}()
	if pid, err := readPID(d.PIDFile()); err == nil && pid != d.cmd.Process.Pid {
		return fmt.Errorf("pid file %s names %d, not the dockerd started (%d)", d.PIDFile(), pid, d.cmd.Process.Pid)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal dockerd %d: %w", d.cmd.Process.Pid, err)
	}
	select {
	case <-d.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := d.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill dockerd %d: %w", d.cmd.Process.Pid, err)
	}
	<-d.exited
	return nil
}

func readPID(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

func (d *Daemon) logTail() string { return LogTail(d.LogPath()) }

// LogTail returns the last 15 lines of a peer's log file, for an error
// saying why the peer did not start.
func LogTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// cleanup stops the daemon, unmounts what it left mounted and removes its
// directory. Failures are logged: they must not hide the test's result.
func (d *Daemon) cleanup(tb testing.TB) {
	if err := d.stop(); err != nil {
		tb.Logf("stop dockerd in %s: %v", d.dir, err)
	}
	UnmountUnder(tb, d.dir)
	if err := os.RemoveAll(d.dir); err != nil {
		tb.Logf("remove dockerd directory %s: %v", d.dir, err)
	}
}

// UnmountUnder lazily unmounts every mount point below dir, deepest first:
// what a runtime left mounted in its private directory.
func UnmountUnder(tb testing.TB, dir string) {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		tb.Logf("read mounts: %v", err)
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 1 && strings.HasPrefix(fields[1], dir+"/") {
			points = append(points, fields[1])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil {
			tb.Logf("unmount %s: %v", points[i], err)
		}
	}
}
