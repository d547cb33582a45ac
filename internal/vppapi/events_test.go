package vppapi

import (
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// TestInterfaceEventsAgainstVPP subscribes to VPP's interface events and
// changes a loopback made by another client: each change arrives as an
// event of its index, with the state after it, while the subscriber's own
// calls keep their replies.
func TestInterfaceEventsAgainstVPP(t *testing.T) {
	v := vpp.Start(t)
	watcher, other := dial(t, v), dial(t, v)
	events := make(chan *vppmsg.SwInterfaceEvent, 16)
	if err := WatchInterfaceEvents(t.Context(), watcher, func(e *vppmsg.SwInterfaceEvent) { events <- e }); err != nil {
		t.Fatal(err)
	}
	var created vppmsg.CreateLoopbackReply
	if err := other.Request(t.Context(), &vppmsg.CreateLoopback{}, &created); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name string
		do   vppmsg.Request
		want func(*vppmsg.SwInterfaceEvent) bool
	}{
		{"admin up", &vppmsg.SwInterfaceSetFlags{SwIfIndex: created.SwIfIndex, Flags: vppmsg.IfStatusAPIFlagAdminUp},
			func(e *vppmsg.SwInterfaceEvent) bool { return e.Flags&vppmsg.IfStatusAPIFlagAdminUp != 0 && !e.Deleted }},
		{"admin down", &vppmsg.SwInterfaceSetFlags{SwIfIndex: created.SwIfIndex},
			func(e *vppmsg.SwInterfaceEvent) bool { return e.Flags&vppmsg.IfStatusAPIFlagAdminUp == 0 && !e.Deleted }},
		{"deleted", &vppmsg.DeleteLoopback{SwIfIndex: created.SwIfIndex},
			func(e *vppmsg.SwInterfaceEvent) bool { return e.Deleted }},
	} {
		if err := other.Request(t.Context(), step.do, replyOf(t, step.do)); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		// The subscriber's own calls are answered meanwhile.
		if err := watcher.Request(t.Context(), &vppmsg.ControlPing{}, &vppmsg.ControlPingReply{}); err != nil {
			t.Fatalf("%s: control_ping of the subscriber: %v", step.name, err)
		}
		waitEvent(t, events, step.name, func(e *vppmsg.SwInterfaceEvent) bool { return e.SwIfIndex == created.SwIfIndex && step.want(e) })
	}
}

func replyOf(t *testing.T, req vppmsg.Request) vppmsg.Reply {
	t.Helper()
	reply, ok := vppmsg.Messages[req.MessageName()+"_reply"]().(vppmsg.Reply)
	if !ok {
		t.Fatalf("no reply message for %s", req.MessageName())
	}
	return reply
}

// waitEvent waits up to waitLimit for an event that matches.
func waitEvent(t *testing.T, events <-chan *vppmsg.SwInterfaceEvent, what string, matches func(*vppmsg.SwInterfaceEvent) bool) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case e := <-events:
			if matches(e) {
				return
			}
		case <-timeout:
			t.Fatalf("%s: no interface event within %s", what, waitLimit)
		}
	}
}
