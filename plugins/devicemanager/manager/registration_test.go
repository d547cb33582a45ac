package manager_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// count returns how many of lines contain text.
func count(lines []string, text string) int {
	n := 0
	for _, line := range lines {
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
	log := testlog.Recording()
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
	// The lines' messages, and their kubelet socket.
	kubeletSocket := fmt.Sprintf(" kubeletSocket=%q", filepath.Join(cfg.PluginDir, cfg.KubeletSocket))
	failure := "WARN the device plugin cannot register with kubelet yet: kubelet admits no pod asking for the devices until it does, retrying" + kubeletSocket
	recovery := "INFO registered with kubelet again: kubelet can hand out the devices" + kubeletSocket
	waitFor(t, "the failed registration logged", func() bool { return count(log.Lines(), failure) > 0 })
	registry, err := fakekubelet.Start(cfg.PluginDir, cfg.KubeletSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(registry.Stop)
	waitFor(t, "the registration logged", func() bool { return count(log.Lines(), recovery) > 0 })
	if n := count(log.Lines(), failure); n != 1 {
		t.Errorf("the failed registration was logged %d times at the default level, want once", n)
	}
}
