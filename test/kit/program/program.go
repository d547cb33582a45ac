package program

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// tailLines is how much of the log Running's error shows.
const tailLines = 15

// Program is a started program with its output in a log file.
type Program struct {
	// Name names the program in errors.
	Name string
	// LogPath is the file its standard output and error are appended to.
	LogPath string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start starts cmd with its standard output and error appended to
// logPath, and returns once it runs.
func Start(name, logPath string, cmd *exec.Cmd) (*Program, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the log of %s: %w", name, err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	p := &Program{Name: name, LogPath: logPath, cmd: cmd, exited: make(chan struct{})}
	err = StartAndWait(cmd, func(err error) {
		p.err = err
		close(p.exited)
	})
	if err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, cmd.Path, err)
	}
	return p, nil
}

// StartAndWait starts cmd and calls exited with Wait's error once it has
// exited, from a goroutine locked to its OS thread all along. Pdeathsig
// is sent when the thread that forked the program ends, not its process:
// a goroutine that ends locked to its thread (runtime.LockOSThread, as the
// agent's remover of released directories does) ends that thread, and a
// program forked from it earlier would be killed with it.
func StartAndWait(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited(cmd.Wait())
	}()
	return <-started
}

// Pid is the program's process ID.
func (p *Program) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the program has exited.
func (p *Program) Exited() <-chan struct{} { return p.exited }

// Running returns nil while the program runs, and once it has exited an
// error naming its exit status with the end of its log.
func (p *Program) Running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); its log %s ends with:\n%s", p.Name, p.err, p.LogPath, Tail(p.LogPath, tailLines))
	default:
		return nil
	}
}

// Stop sends SIGTERM, then SIGKILL after grace, and waits for the exit;
// killed says that SIGTERM was not enough. Stopping a program that has
// exited, or a nil one, does nothing.
func (p *Program) Stop(grace time.Duration) (killed bool, err error) {
	if p == nil {
		return false, nil
	}
	select {
	case <-p.exited:
		return false, nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return false, fmt.Errorf("stop %s: %w", p.Name, err)
	}
	select {
	case <-p.exited:
		return false, nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return true, nil
}

// Tail returns the last n lines of the file at path, for error messages.
func Tail(path string, n int) string {
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
