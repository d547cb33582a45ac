package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a peer gets to exit on SIGTERM before SIGKILL.
const stopGrace = 20 * time.Second

// process is one peer program the cluster started, with its output in a
// log file. Its wait goroutine ends when the program does.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	err     error
}

// startProcess starts argv with its output in logDir/name.log (appended,
// so restarts keep the history). The program gets its own process group, so
// a Ctrl-C at the terminal reaches the harness, which stops the peers in
// order, and SIGKILL if the harness dies.
func startProcess(logDir, name string, env []string, argv ...string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the log of %s: %w", name, err)
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// running returns an error naming the exit and the log's tail once the
// program has exited.
func (p *process) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); its log %s ends with:\n%s", p.name, p.err, p.logPath, tailFile(p.logPath, 15))
	default:
		return nil
	}
}

// stop sends SIGTERM, then SIGKILL after stopGrace, and waits for the exit.
func (p *process) stop() error {
	if p == nil {
		return nil
	}
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.name, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopGrace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return nil
}

// tailFile returns the last n lines of path, for error messages.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
