package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/ociimage"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// PauseImage is the image of every sandbox and app container: a process
// that waits for SIGTERM.
const PauseImage = "memif.test/pause:1"

const (
	startTimeout = 60 * time.Second
	stopTimeout  = 20 * time.Second
	// callTimeout bounds one pod's CRI calls: a failure deadline, wide
	// because a loaded 2-core machine runs runc and the shim slowly.
	callTimeout = 2 * time.Minute
)

// Build is one containerd build: the directory holding containerd, ctr and
// containerd-shim-runc-v2.
type Build struct {
	Name string
	Dir  string
}

// Debian is Debian's containerd 1.6.
func Debian() Build { return Build{Name: "containerd 1.6 (Debian)", Dir: "/usr/bin"} }

// Cached is the newest containerd 2.x scripts/peers.sh built into the
// peers cache ($PEERS_CACHE, default /var/cache/memif-agent/peers); it
// skips tb (fails it under CI) when there is none.
func Cached(tb testing.TB) Build {
	tb.Helper()
	cache := os.Getenv("PEERS_CACHE")
	if cache == "" {
		cache = "/var/cache/memif-agent/peers"
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "containerd-v2.*"))
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "containerd")); err == nil {
			return Build{Name: "containerd " + filepath.Base(dirs[i])[len("containerd-"):], Dir: dirs[i]}
		}
	}
	needs.Unavailable(tb, "no containerd 2.x in %s (run scripts/peers.sh)", cache)
	return Build{}
}

// Daemon is a private containerd. Create it with Start.
type Daemon struct {
	Build Build
	dir   string

	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{}
	waitErr error

	conn    *grpc.ClientConn
	runtime runtimev1.RuntimeServiceClient
}

// Start runs build with a private root, state and socket, imports
// PauseImage, and stops everything when the test ends.
func Start(tb testing.TB, build Build) *Daemon {
	tb.Helper()
	needs.Root(tb, "a private containerd")
	if _, err := os.Stat(filepath.Join(build.Dir, "containerd")); err != nil {
		needs.Unavailable(tb, "%s is not installed (run scripts/install-deps.sh): %v", build.Name, err)
	}
	// Short: the socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "ctd")
	if err != nil {
		tb.Fatalf("create containerd directory: %v", err)
	}
	d := &Daemon{Build: build, dir: dir}
	tb.Cleanup(func() { d.cleanup(tb) })
	if err := os.WriteFile(d.configPath(), []byte(d.config()), 0o600); err != nil {
		tb.Fatalf("write containerd config: %v", err)
	}
	if d.conn, err = grpc.NewClient("unix://"+d.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		tb.Fatalf("CRI client of %s: %v", d.Socket(), err)
	}
	d.runtime = runtimev1.NewRuntimeServiceClient(d.conn)
	if err := d.start(); err != nil {
		needs.Unavailable(tb, "%s did not start: %v", build.Name, err)
	}
	d.importPause(tb)
	return d
}

// Socket is the daemon's socket: its gRPC API and the CRI.
func (d *Daemon) Socket() string { return filepath.Join(d.dir, "containerd.sock") }

// Runtime is a CRI runtime service client of the daemon.
func (d *Daemon) Runtime() runtimev1.RuntimeServiceClient { return d.runtime }

// LogPath is the daemon's combined output.
func (d *Daemon) LogPath() string { return filepath.Join(d.dir, "containerd.log") }

func (d *Daemon) configPath() string { return filepath.Join(d.dir, "config.toml") }

// config is a version 2 config, which containerd 2.x migrates.
func (d *Daemon) config() string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    conf_dir = %[7]q
`, filepath.Join(d.dir, "root"), filepath.Join(d.dir, "state"), d.Socket(), d.Socket()+".ttrpc",
		filepath.Join(d.dir, "opt"), PauseImage, filepath.Join(d.dir, "cni"))
}

func (d *Daemon) start() error {
	log, err := os.OpenFile(d.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open containerd log: %w", err)
	}
	cmd := exec.Command(filepath.Join(d.Build.Dir, "containerd"), "--config", d.configPath())
	cmd.Stdout, cmd.Stderr = log, log
	// The shim is found on PATH: this build's first.
	cmd.Env = append(os.Environ(), "PATH="+d.Build.Dir+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("run %s: %w", cmd.Path, err)
	}
	d.cmd, d.log, d.exited = cmd, log, make(chan struct{})
	go func() {
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	if err := d.waitReady(); err != nil {
		d.stop()
		return fmt.Errorf("%w; log tail:\n%s", err, d.logTail())
	}
	return nil
}

// waitReady polls the CRI until it answers, the process exits or the
// start timeout passes.
func (d *Daemon) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		callCtx, callCancel := context.WithTimeout(ctx, time.Second)
		_, err := d.runtime.Version(callCtx, &runtimev1.VersionRequest{})
		callCancel()
		if err == nil {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("%s exited before answering: %v", d.Build.Name, d.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer at %s within %s: %w", d.Build.Name, d.Socket(), startTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Restart stops the daemon and starts it on the same state: pods keep
// running in their shims.
func (d *Daemon) Restart(tb testing.TB) {
	tb.Helper()
	d.stop()
	if err := d.start(); err != nil {
		tb.Fatalf("restart %s: %v", d.Build.Name, err)
	}
}

// stop signals the daemon and waits for it; a daemon not running is left.
func (d *Daemon) stop() {
	if d.cmd == nil {
		return
	}
	defer func() {
		d.log.Close()
		d.cmd = nil
	}()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	select {
	case <-d.exited:
		return
	case <-time.After(stopTimeout):
	}
	_ = d.cmd.Process.Kill()
	<-d.exited
}

var pauseArchive struct {
	once sync.Once
	data []byte
	err  error
}

// importPause imports PauseImage, built once per test binary.
func (d *Daemon) importPause(tb testing.TB) {
	tb.Helper()
	pauseArchive.once.Do(func() {
		dir, err := os.MkdirTemp("", "pause")
		if err != nil {
			pauseArchive.err = err
			return
		}
		defer os.RemoveAll(dir)
		img, err := ociimage.PauseImage(PauseImage)
		if err != nil {
			pauseArchive.err = err
			return
		}
		archive := filepath.Join(dir, "pause.tar")
		if pauseArchive.err = img.WriteArchive(archive); pauseArchive.err == nil {
			pauseArchive.data, pauseArchive.err = os.ReadFile(archive)
		}
	})
	if pauseArchive.err != nil {
		tb.Fatalf("build %s: %v", PauseImage, pauseArchive.err)
	}
	archive := filepath.Join(d.dir, "pause.tar")
	if err := os.WriteFile(archive, pauseArchive.data, 0o600); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(d.Build.Dir, "ctr"), "--address", d.Socket(), "--namespace", "k8s.io",
		"images", "import", archive).CombinedOutput()
	if err != nil {
		tb.Fatalf("import %s into %s: %v\n%s", PauseImage, d.Build.Name, err, out)
	}
	// The CRI learns of an imported image from containerd's events, after
	// the import returns; a sandbox run before that pulls the image from
	// a registry that does not exist.
	images := runtimev1.NewImageServiceClient(d.conn)
	poll.Until(tb, callTimeout, PauseImage+" listed by the CRI of "+d.Build.Name, func() error {
		status, err := images.ImageStatus(context.Background(), &runtimev1.ImageStatusRequest{Image: &runtimev1.ImageSpec{Image: PauseImage}})
		if err != nil {
			return err
		}
		if status.GetImage() == nil {
			return errors.New("not listed yet")
		}
		return nil
	})
}

func (d *Daemon) logTail() string { return dockerd.LogTail(d.LogPath()) }

// cleanup removes every pod (which ends their shims), stops the daemon,
// unmounts what it left and removes its directory. Failures are logged:
// they must not hide the test's result.
func (d *Daemon) cleanup(tb testing.TB) {
	if d.cmd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		if sandboxes, err := d.runtime.ListPodSandbox(ctx, &runtimev1.ListPodSandboxRequest{}); err == nil {
			for _, sandbox := range sandboxes.GetItems() {
				if err := removeSandbox(ctx, d.runtime, sandbox.GetId()); err != nil {
					tb.Logf("remove pod sandbox %s: %v", sandbox.GetId(), err)
				}
			}
		}
		cancel()
	}
	d.stop()
	if d.conn != nil {
		d.conn.Close()
	}
	dockerd.UnmountUnder(tb, d.dir)
	if err := os.RemoveAll(d.dir); err != nil {
		tb.Logf("remove containerd directory %s: %v", d.dir, err)
	}
}

func removeSandbox(ctx context.Context, runtime runtimev1.RuntimeServiceClient, id string) error {
	if _, err := runtime.StopPodSandbox(ctx, &runtimev1.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return err
	}
	_, err := runtime.RemovePodSandbox(ctx, &runtimev1.RemovePodSandboxRequest{PodSandboxId: id})
	return err
}
