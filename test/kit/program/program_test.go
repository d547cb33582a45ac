package program_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/program"
)

func TestRunningNamesTheExitAndTheLogsEnd(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "p.log")
	p, err := program.Start("failing", logPath, exec.Command("sh", "-c", "echo first; echo it broke; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	err = p.Running()
	if err == nil || !strings.Contains(err.Error(), "failing exited (exit status 3)") || !strings.Contains(err.Error(), "first\nit broke") {
		t.Errorf("Running after the exit = %v, want the exit status and the log's end", err)
	}
	if killed, err := p.Stop(time.Minute); killed || err != nil {
		t.Errorf("Stop of an exited program = %v, %v; want nothing done", killed, err)
	}
}

func TestStop(t *testing.T) {
	cases := []struct {
		name       string
		script     string
		wantKilled bool
	}{
		{"exits on SIGTERM", "exec sleep 600", false},
		{"ignores SIGTERM", `trap "" TERM; echo ready; while :; do :; done`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "p.log")
			p, err := program.Start(tc.name, logPath, exec.Command("sh", "-c", tc.script))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantKilled {
				// The trap must be set before SIGTERM is sent.
				poll.Until(t, time.Minute, "the program set its trap", func() error {
					if last := program.Tail(logPath, 1); last != "ready" {
						return fmt.Errorf("its log ends with %q", last)
					}
					return nil
				})
			}
			killed, err := p.Stop(200 * time.Millisecond)
			if err != nil || killed != tc.wantKilled {
				t.Errorf("Stop = killed %v, %v; want killed %v", killed, err, tc.wantKilled)
			}
			if p.Running() == nil {
				t.Error("still running after Stop")
			}
		})
	}
	var none *program.Program
	if killed, err := none.Stop(time.Second); killed || err != nil {
		t.Errorf("Stop of nil = %v, %v", killed, err)
	}
}

func TestTail(t *testing.T) {
	if got := program.Tail(filepath.Join(t.TempDir(), "missing.log"), 3); !strings.HasPrefix(got, "(cannot read ") {
		t.Errorf("Tail of a missing file = %q, want why it cannot be read", got)
	}
}

// TestProgramOutlivesTheThreadThatStartedIt: Pdeathsig follows the
// forking thread, and a goroutine that ends locked to its thread ends it.
func TestProgramOutlivesTheThreadThatStartedIt(t *testing.T) {
	started := make(chan *program.Program)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		p, err := program.Start("sleeper", filepath.Join(t.TempDir(), "p.log"), cmd)
		if err != nil {
			t.Error(err)
		}
		started <- p
	}()
	p := <-started
	if p == nil {
		return
	}
	defer p.Stop(time.Second)
	// The starting thread's end is asynchronous: a killed program would
	// be gone well within this.
	select {
	case <-p.Exited():
		t.Errorf("the program died with the thread that started it: %v", p.Running())
	case <-time.After(time.Second):
	}
}
