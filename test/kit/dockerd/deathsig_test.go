package dockerd_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/poll"
)

// holdEnv makes TestHelperHoldsDockerd, in a test process of its own,
// start a dockerd, print heldPrefix, its directory and pid, and wait to be
// killed.
const (
	holdEnv    = "DOCKERD_KIT_TEST_HOLD"
	heldPrefix = "dockerd held: "
)

func TestHelperHoldsDockerd(t *testing.T) {
	if os.Getenv(holdEnv) == "" {
		t.Skip("the helper process of TestDockerdDiesWithItsTestProcess")
	}
	daemon := dockerd.Start(t)
	pid, err := os.ReadFile(daemon.PIDFile())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s %s\n", heldPrefix, daemon.Dir(), strings.TrimSpace(string(pid)))
	time.Sleep(time.Hour)
}

// A test process killed before its cleanup (SIGKILL, go test's -timeout)
// leaves no dockerd running behind it.
func TestDockerdDiesWithItsTestProcess(t *testing.T) {
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperHoldsDockerd$", "-test.v")
	helper.Env = append(os.Environ(), holdEnv+"=1")
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = helper.Stdout
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var said []string
	dir, pid := "", 0
	for lines := bufio.NewScanner(stdout); lines.Scan(); {
		said = append(said, lines.Text())
		if held, ok := strings.CutPrefix(lines.Text(), heldPrefix); ok {
			fields := strings.Fields(held)
			dir = fields[0]
			pid, err = strconv.Atoi(fields[1])
			break
		}
	}
	if pid == 0 || err != nil {
		helper.Process.Kill()
		helper.Wait()
		t.Fatalf("the helper started no dockerd (%v):\n%s", err, strings.Join(said, "\n"))
	}
	t.Cleanup(func() {
		if t.Failed() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		dockerd.UnmountUnder(t, dir)
		os.RemoveAll(dir)
	})
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	poll.Until(t, time.Minute, fmt.Sprintf("dockerd %d gone after its test process was killed", pid), func() error {
		if running(pid) {
			return errors.New("still running")
		}
		return nil
	})
}

// running tells whether process pid runs: an exited one not reaped yet (a
// zombie, state Z in /proc) does not.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, in parentheses.
	afterName := stat[strings.LastIndexByte(string(stat), ')')+1:]
	state := strings.Fields(string(afterName))
	return len(state) > 0 && state[0] != "Z"
}
