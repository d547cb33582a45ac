package inprocess_test

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/inprocess"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/vswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/syncbuffer"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// TestVswitchConnectsIntoARunningLoop: an agent started beside a running
// VPP connects to it in the vswitch's Init and hands the loop its resync
// after connecting, with no error in the vswitch's log. The vswitch
// started before the controller pushed into no loop at every start:
// "resync after connecting to VPP not pushed ... controller event loop is
// closed".
func TestVswitchConnectsIntoARunningLoop(t *testing.T) {
	v := vpp.Start(t)
	cfg := vswitch.DefaultConfig()
	cfg.VPPAPISocket = v.APISocket
	var vswitchLog syncbuffer.Buffer
	a := inprocess.Start(t, inprocess.Options{
		Configs:    map[string]any{vswitch.PluginName: cfg},
		VswitchLog: io.MultiWriter(&vswitchLog, testlog.Writer(t)),
	})
	poll.Until(t, waitLimit, "the resync after connecting to VPP processed", func() error {
		processed := eventNames(a.Controller.EventHistory(controllerapi.HistoryQuery{}))
		if !slices.Contains(processed, vswitch.ReconnectResyncName) {
			return fmt.Errorf("the loop processed %v", processed)
		}
		return nil
	})
	for line := range strings.Lines(vswitchLog.String()) {
		if strings.Contains(line, "level=error") {
			t.Errorf("the vswitch logged an error at start: %s", line)
		}
	}
}

func eventNames(history []controllerapi.EventRecord) []string {
	names := make([]string, len(history))
	for i, rec := range history {
		names[i] = rec.Name
	}
	return names
}
