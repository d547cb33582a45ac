package manager_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
)

// recordingLogger keeps the lines logged at info level and above.
type recordingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordingLogger) add(level, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(format, args...))
}

func (l *recordingLogger) Debugf(string, ...any)             {}
func (l *recordingLogger) Infof(format string, args ...any)  { l.add("INFO", format, args...) }
func (l *recordingLogger) Warnf(format string, args ...any)  { l.add("WARN", format, args...) }
func (l *recordingLogger) Errorf(format string, args ...any) { l.add("ERROR", format, args...) }

// count returns how many lines contain text.
func (l *recordingLogger) count(text string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, text) {
			n++
		}
	}
	return n
}

// A registration kubelet is not there for is said once at the default
// level, however many retries fail, and so is the registration that
// follows.
func TestRegistrationFailureIsLoggedOnce(t *testing.T) {
	cfg := testConfig(t)
	if err := os.MkdirAll(cfg.PluginDir, 0o750); err != nil {
		t.Fatal(err)
	}
	log := &recordingLogger{}
	dm, err := manager.New(cfg, manager.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Handlers: []controllerapi.EventHandler{dm}, Committer: fakevswitch.Committer{}})
	if err != nil {
		t.Fatal(err)
	}
	loop.Start()
	t.Cleanup(func() { loop.Close() })
	if err := dm.Start(loop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dm.Stop)
	const failure, recovery = "WARN the device plugin cannot register with kubelet", "INFO registered with kubelet at"
	waitFor(t, "the failed registration logged", func() bool { return log.count(failure) > 0 })
	registry, err := fakekubelet.Start(cfg.PluginDir, cfg.KubeletSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(registry.Stop)
	waitFor(t, "the registration logged", func() bool { return log.count(recovery) > 0 })
	if n := log.count(failure); n != 1 {
		t.Errorf("the failed registration was logged %d times at the default level, want once", n)
	}
}
