package vppapi

import (
	"testing"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// TestContextOffset finds each message's context where VPP puts it: after
// the message ID, or after the client's index for the details VPP sends
// with it first (the reader dropped those as answers to no call).
func TestContextOffset(t *testing.T) {
	for _, c := range []struct {
		message vppmsg.Message
		want    int
	}{
		{&vppmsg.SwInterfaceRxPlacementDetails{}, 6},
		{&vppmsg.ControlPingReply{}, 2},
		{&vppmsg.MemifDetails{}, 2},
		{&vppmsg.SwInterfaceSetRxModeReply{}, 2},
	} {
		if got := contextOffset(1, c.message); got != c.want {
			t.Errorf("context of %s at byte %d, want %d", c.message.MessageName(), got, c.want)
		}
	}
}
