package testpmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Binary is the testpmd executable of Debian's dpdk-dev package.
const Binary = "dpdk-testpmd"

// RuntimeDirEnv names the directory under which DPDK makes its runtime
// directory (dpdk/<file prefix>, with the telemetry socket inside) instead
// of /var/run: each testpmd this package starts gets a temporary one of its
// own, removed when it stops, so nothing is left in /var/run/dpdk.
const RuntimeDirEnv = "RUNTIME_DIRECTORY"

const (
	// startTimeout bounds how long testpmd may take to probe its memif
	// port when StartVswitch's context has no deadline: minutes, for a
	// loaded machine.
	startTimeout = 2 * time.Minute
	// stopTimeout bounds a clean exit before the process is killed.
	stopTimeout = 10 * time.Second
	// pollInterval is how often the link state is read while waiting.
	pollInterval = 20 * time.Millisecond
)

// VswitchConfig says where the vswitch side listens.
type VswitchConfig struct {
	// Socket is the memif socket file on the host; testpmd creates it, so
	// its directory must exist.
	Socket string
	// Secret is the memif shared secret the pod side must present.
	Secret string
	// LogPath receives testpmd's output.
	LogPath string
	// Cores is testpmd's lcore list (-l); default "0,1": main lcore 0,
	// forwarding on 1.
	Cores string
	// Client makes testpmd the memif client (slave) instead of the server:
	// a pod side run on the host, facing a real vswitch such as VPP.
	Client bool
	// ForwardMode is testpmd's forwarding mode; default rxonly (count what
	// arrives), txonly sends 64-byte packets.
	ForwardMode string
}

// Vswitch is a running vswitch-side testpmd. Stop it with Stop.
type Vswitch struct {
	config     VswitchConfig
	filePrefix string
	// listenSocket is where the memif server socket is: testpmd makes it
	// under another name, renamed to config.Socket once its port is
	// started; config.Socket for a client.
	listenSocket string
	runtimeDir   string // RuntimeDirEnv of the process
	cmd          *exec.Cmd
	stdin        io.WriteCloser
	exited       chan struct{}
	waitErr      error
}

// StartVswitch starts testpmd as memif server on cfg.Socket and returns once
// its port is started, cfg.Socket is there and its telemetry answers.
//
// DPDK's memif server accepts on its socket from the port's probe on, but
// refuses a client ("ID not found") until the port is started, and DPDK's
// memif client does not try again: a pod that connects as soon as the
// socket exists would stay down. So testpmd makes its socket under another
// name in the same directory, renamed to cfg.Socket once the port is
// started.
func StartVswitch(ctx context.Context, cfg VswitchConfig) (*Vswitch, error) {
	if cfg.Cores == "" {
		cfg.Cores = "0,1"
	}
	prefix, err := uniqueFilePrefix()
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create vswitch log %s: %w", cfg.LogPath, err)
	}
	defer logFile.Close()
	// A short path: the telemetry socket inside must fit in 108 bytes.
	runtimeDir, err := os.MkdirTemp("", "testpmd-")
	if err != nil {
		return nil, fmt.Errorf("create vswitch DPDK runtime directory: %w", err)
	}
	listenSocket := cfg.Socket
	if !cfg.Client {
		// Short: the whole path must fit in 108 bytes.
		listenSocket = filepath.Join(filepath.Dir(cfg.Socket), "."+prefix[len(prefix)-8:]+".sock")
	}
	cmd := exec.Command(Binary, vswitchArgs(cfg, listenSocket, prefix)...)
	cmd.Env = append(os.Environ(), RuntimeDirEnv+"="+runtimeDir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Without --stats-period, testpmd runs until its stdin reaches EOF:
	// closing the pipe is the clean stop.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		_ = os.RemoveAll(runtimeDir)
		return nil, fmt.Errorf("vswitch stdin: %w", err)
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(runtimeDir)
		return nil, fmt.Errorf("start %s (is it installed? run scripts/install-deps.sh): %w", Binary, err)
	}
	v := &Vswitch{config: cfg, filePrefix: prefix, listenSocket: listenSocket, runtimeDir: runtimeDir, cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go v.wait()
	if err := v.waitStarted(ctx); err != nil {
		_ = v.Stop()
		return nil, err
	}
	return v, nil
}

// vswitchArgs is testpmd's command line: no hugepages and no PCI, so it
// runs anywhere as root; the memif driver's info logs show connections.
func vswitchArgs(cfg VswitchConfig, socket, prefix string) []string {
	role, mode := "server", "rxonly"
	if cfg.Client {
		role = "client"
	}
	if cfg.ForwardMode != "" {
		mode = cfg.ForwardMode
	}
	vdev := fmt.Sprintf("net_memif0,role=%s,socket=%s,socket-abstract=no,secret=%s", role, socket, cfg.Secret)
	return []string{
		"--no-huge", "-m", "256", "--no-pci", "--file-prefix", prefix, "-l", cfg.Cores,
		"--log-level=pmd.net.memif,info", "--vdev=" + vdev,
		"--", "-a", "--forward-mode=" + mode, "--total-num-mbufs=16384",
	}
}

// uniqueFilePrefix keeps concurrent testpmd processes (other tests, other
// vswitches) from sharing a DPDK runtime directory, which DPDK refuses.
func uniqueFilePrefix() (string, error) {
	random := make([]byte, 6)
	if _, err := rand.Read(random); err != nil {
		return "", fmt.Errorf("random DPDK file prefix: %w", err)
	}
	return "memif-vswitch-" + hex.EncodeToString(random), nil
}

func (v *Vswitch) wait() {
	v.waitErr = v.cmd.Wait()
	close(v.exited)
}

func (v *Vswitch) telemetrySocket() string {
	return filepath.Join(v.runtimeDir, "dpdk", v.filePrefix, "dpdk_telemetry.v2")
}

// waitStarted waits until telemetry answers and the port is started, then
// gives the memif server's socket its name. DPDK opens its telemetry
// socket after probing devices, so an empty port list then means the memif
// port failed to probe (for example, its socket directory is missing).
func (v *Vswitch) waitStarted(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	for {
		started, err := v.portStarted(ctx)
		if err != nil {
			return err
		}
		if started {
			break
		}
		select {
		case <-v.exited:
			return fmt.Errorf("vswitch testpmd on %s exited at start (%v); its log %s ends with:\n%s",
				v.config.Socket, v.waitErr, v.config.LogPath, v.LogTail(10))
		case <-ctx.Done():
			return fmt.Errorf("vswitch testpmd on %s: port not started: %w; see %s", v.config.Socket, ctx.Err(), v.config.LogPath)
		case <-time.After(pollInterval):
		}
	}
	if v.listenSocket != v.config.Socket {
		if err := os.Rename(v.listenSocket, v.config.Socket); err != nil {
			return fmt.Errorf("give the vswitch's memif socket its name: %w", err)
		}
		v.listenSocket = v.config.Socket
	}
	return nil
}

// portStarted says whether testpmd started its memif port.
func (v *Vswitch) portStarted(ctx context.Context) (bool, error) {
	var ports []int
	if err := v.query(ctx, "/ethdev/list", &ports); err != nil {
		return false, fmt.Errorf("vswitch testpmd on %s not ready: %w; see %s", v.config.Socket, err, v.config.LogPath)
	}
	if len(ports) == 0 {
		return false, fmt.Errorf("vswitch testpmd could not make a memif port on %s; its log %s ends with:\n%s",
			v.config.Socket, v.config.LogPath, v.LogTail(10))
	}
	var info struct {
		Started int `json:"dev_started"`
	}
	if err := v.query(ctx, "/ethdev/info,0", &info); err != nil {
		return false, fmt.Errorf("vswitch testpmd on %s: %w", v.config.Socket, err)
	}
	return info.Started == 1, nil
}

// LinkUp says whether the memif is connected to a client that gave the
// right secret.
func (v *Vswitch) LinkUp(ctx context.Context) (bool, error) {
	var link struct {
		Status string `json:"status"`
	}
	if err := v.query(ctx, "/ethdev/link_status,0", &link); err != nil {
		return false, err
	}
	return link.Status == "UP", nil
}

// WaitLinkUp waits until the link is up, testpmd exits or ctx ends.
func (v *Vswitch) WaitLinkUp(ctx context.Context) error {
	for {
		up, err := v.LinkUp(ctx)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if up {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("memif link on %s still down: %w; a wrong secret shows as \"Incorrect secret\" in the pod side's output", v.config.Socket, ctx.Err())
		case <-v.exited:
			return v.explain(errors.New("exited"))
		case <-time.After(pollInterval):
		}
	}
}

// PortStats are the vswitch port's counters since the link came up; DPDK's
// memif driver resets them when the link goes down.
type PortStats struct {
	RxPackets uint64 `json:"ipackets"`
	RxBytes   uint64 `json:"ibytes"`
	TxPackets uint64 `json:"opackets"`
	RxMissed  uint64 `json:"imissed"`
}

// Stats reads the port's counters.
func (v *Vswitch) Stats(ctx context.Context) (PortStats, error) {
	var stats PortStats
	if err := v.query(ctx, "/ethdev/stats,0", &stats); err != nil {
		return PortStats{}, err
	}
	return stats, nil
}

// WaitReceiving waits until the port receives packets after the call (its
// receive counter grows), testpmd exits or ctx ends, and returns the
// counters then. Unlike a rate over a window, it cannot fail because a
// loaded machine gave the sender no CPU for a while.
func (v *Vswitch) WaitReceiving(ctx context.Context) (PortStats, error) {
	before, err := v.Stats(ctx)
	if err != nil {
		return PortStats{}, err
	}
	for {
		now, err := v.Stats(ctx)
		if err != nil {
			return PortStats{}, err
		}
		if now.RxPackets > before.RxPackets {
			return now, nil
		}
		select {
		case <-ctx.Done():
			return PortStats{}, fmt.Errorf("memif on %s received no packet since %d: %w", v.config.Socket, before.RxPackets, ctx.Err())
		case <-v.exited:
			return PortStats{}, v.explain(errors.New("exited"))
		case <-time.After(pollInterval):
		}
	}
}

// RxRate measures received packets per second over window.
func (v *Vswitch) RxRate(ctx context.Context, window time.Duration) (float64, error) {
	before, err := v.Stats(ctx)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(window):
	}
	after, err := v.Stats(ctx)
	if err != nil {
		return 0, err
	}
	if after.RxPackets < before.RxPackets {
		return 0, fmt.Errorf("memif link on %s went down while measuring (counters reset)", v.config.Socket)
	}
	return float64(after.RxPackets-before.RxPackets) / time.Since(start).Seconds(), nil
}

// explain adds to err that testpmd is gone, when it is.
func (v *Vswitch) explain(err error) error {
	select {
	case <-v.exited:
		return fmt.Errorf("vswitch testpmd on %s is not running (%v): %w; its log %s ends with:\n%s",
			v.config.Socket, v.waitErr, err, v.config.LogPath, v.LogTail(10))
	default:
		return err
	}
}

// LogTail returns the last n lines of testpmd's output.
func (v *Vswitch) LogTail(n int) string {
	content, err := os.ReadFile(v.config.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", v.config.LogPath, err)
	}
	lines := bytes.Split(bytes.TrimRight(content, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Stop stops testpmd (EOF on its stdin, then SIGKILL after stopTimeout) and
// removes its memif server socket and its DPDK runtime directory. It reports a crash that happened
// before the stop. It is safe to call more than once.
func (v *Vswitch) Stop() error {
	var crashed error
	select {
	case <-v.exited:
		if v.waitErr != nil {
			crashed = fmt.Errorf("vswitch testpmd on %s had exited before stop: %w", v.config.Socket, v.waitErr)
		}
	default:
	}
	_ = v.stdin.Close()
	select {
	case <-v.exited:
	case <-time.After(stopTimeout):
		_ = v.cmd.Process.Kill()
		<-v.exited
	}
	var left error
	if !v.config.Client {
		// testpmd removes its socket by the name it made it under, not
		// the one it was given since.
		if err := os.Remove(v.listenSocket); err != nil && !errors.Is(err, os.ErrNotExist) {
			left = fmt.Errorf("remove the vswitch's memif socket: %w", err)
		}
	}
	if err := os.RemoveAll(v.runtimeDir); err != nil {
		left = errors.Join(left, fmt.Errorf("remove DPDK runtime directory: %w", err))
	}
	return errors.Join(crashed, left)
}

// String describes the vswitch side without its secret.
func (v *Vswitch) String() string {
	return fmt.Sprintf("testpmd memif server pid %d on %s", v.cmd.Process.Pid, v.config.Socket)
}
