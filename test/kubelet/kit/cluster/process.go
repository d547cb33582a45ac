package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/contivpp/memif-agent/test/kit/program"
)

// stopGrace is how long a peer gets to exit on SIGTERM before SIGKILL.
const stopGrace = 20 * time.Second

// process is one peer program the cluster started, with its output in a
// log file.
type process struct{ *program.Program }

// startProcess starts argv with its output in logDir/name.log (appended,
// so restarts keep the history). The program gets its own process group, so
// a Ctrl-C at the terminal reaches the harness, which stops the peers in
// order, and SIGKILL if the harness dies.
func startProcess(logDir, name string, env []string, argv ...string) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p, err := program.Start(name, filepath.Join(logDir, name+".log"), cmd)
	if err != nil {
		return nil, err
	}
	return &process{p}, nil
}

// stop sends SIGTERM, then SIGKILL after stopGrace, and waits for the exit.
func (p *process) stop() error {
	if p == nil {
		return nil
	}
	_, err := p.Stop(stopGrace)
	return err
}
