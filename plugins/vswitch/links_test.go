package vswitch

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// makeMemif makes an admin-up memif master of the agent's named name in
// VPP, on a socket in VPP's directory, and returns its socket and VPP name.
// dialVPP connects to v's API socket as client, until t's end.
func dialVPP(t *testing.T, v *vpp.VPP, client string) *vppapi.Conn {
	t.Helper()
	conn, err := vppapi.Dial(t.Context(), v.APISocket, client, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// startPodSide starts DPDK testpmd as a memif's pod side (the client) on
// socket with secret, forwarding in mode (empty: testpmd's default), until
// t's end.
func startPodSide(t *testing.T, socket, secret, mode string) *testpmd.Vswitch {
	t.Helper()
	peer, err := testpmd.StartVswitch(t.Context(), testpmd.VswitchConfig{Socket: socket, Secret: secret, Client: true,
		ForwardMode: mode, LogPath: filepath.Join(t.TempDir(), "peer.log")})
	if err != nil {
		t.Fatalf("memif peer on %s: %v", socket, err)
	}
	t.Cleanup(func() { peer.Stop() })
	return peer
}

// waitLinkUp waits up to a minute for peer's link to come up.
func waitLinkUp(t *testing.T, peer *testpmd.Vswitch) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := peer.WaitLinkUp(ctx); err != nil {
		t.Fatal(err)
	}
}

func makeMemif(t *testing.T, v *vpp.VPP, conn *vppapi.Conn, name, secret string) (socket, vppName string) {
	t.Helper()
	ctx := t.Context()
	socket = filepath.Join(v.Dir, name+".sock")
	var added vppmsg.MemifSocketFilenameAddDelV2Reply
	if err := conn.Request(ctx, &vppmsg.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: ^uint32(0), SocketFilename: socket}, &added); err != nil {
		t.Fatal(err)
	}
	var created vppmsg.MemifCreateV2Reply
	if err := conn.Request(ctx, &vppmsg.MemifCreateV2{Role: vppmsg.MemifRoleAPIMaster, SocketID: added.SocketID, Secret: secret}, &created); err != nil {
		t.Fatal(err)
	}
	if err := conn.Request(ctx, &vppmsg.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: created.SwIfIndex, Tag: owner.Tag(name)}, &vppmsg.SwInterfaceTagAddDelReply{}); err != nil {
		t.Fatal(err)
	}
	if err := conn.Request(ctx, &vppmsg.SwInterfaceSetFlags{SwIfIndex: created.SwIfIndex, Flags: vppmsg.IfStatusAPIFlagAdminUp}, &vppmsg.SwInterfaceSetFlagsReply{}); err != nil {
		t.Fatal(err)
	}
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](ctx, conn, &vppmsg.MemifDump{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range memifs {
		if m.SwIfIndex == created.SwIfIndex {
			return socket, m.IfName
		}
	}
	t.Fatalf("memif_dump lacks the memif made, %d", created.SwIfIndex)
	return "", ""
}

// TestLinkStateFromVPPEvents runs the link watcher with a period of an
// hour, so that only VPP's interface events move it: a pod side (testpmd)
// connecting brings the link up, and the KV scheduler is told so (the rx
// modes wait for it); the pod side leaving brings it down, and the
// scheduler is told that too; the memif deleted is gone from the links,
// and its link state from the scheduler.
func TestLinkStateFromVPPEvents(t *testing.T) {
	v := vpp.Start(t)
	conn := dialVPP(t, v, "links-test")
	const name, secret = "pod-memif", "s3cret"
	socket, vppName := makeMemif(t, v, conn, name, secret)
	clock := time.Unix(1000, 0)
	w, pushed := watcherOn(t, conn, nil, &clock)
	// The first period's read, as after a connection whose resync read
	// nothing.
	w.check(t.Context())
	go w.run(t.Context(), time.Hour)
	var podSide *testpmd.Vswitch
	for _, step := range []struct {
		name string
		do   func()
		// want is the link wanted, nil: none; told is what the
		// scheduler was told last.
		want func(link vswitchapi.MemifLink) bool
		told string
	}{
		{"before the pod side", func() {}, func(link vswitchapi.MemifLink) bool { return !link.Up }, vpp_interfaces.LinkStateKey(name, false)},
		{"pod side connected", func() {
			podSide = startPodSide(t, socket, secret, "")
			waitLinkUp(t, podSide)
		}, func(link vswitchapi.MemifLink) bool { return link.Up }, vpp_interfaces.LinkStateKey(name, true)},
		{"pod side gone", func() { podSide.Stop() }, func(link vswitchapi.MemifLink) bool { return !link.Up }, vpp_interfaces.LinkStateKey(name, false)},
		{"memif deleted", func() { deleteMemif(t, conn, v, vppName) }, nil, "removed " + vpp_interfaces.LinkStateKey(name, false)},
	} {
		step.do()
		poll.Until(t, time.Minute, name+" "+step.name, func() error {
			link, err := linkOf(w, name)
			switch {
			case step.want == nil && err == nil:
				return fmt.Errorf("link %+v, want none", link)
			case step.want != nil && (err != nil || !step.want(link)):
				return fmt.Errorf("link %+v (%v)", link, err)
			case pushed.last() != step.told:
				return fmt.Errorf("the KV scheduler was last told %q, want %q", pushed.last(), step.told)
			}
			return nil
		})
	}
}

// deleteMemif deletes the memif VPP names vppName.
func deleteMemif(t *testing.T, conn *vppapi.Conn, v *vpp.VPP, vppName string) {
	t.Helper()
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](t.Context(), conn, &vppmsg.MemifDump{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range memifs {
		if m.IfName == vppName {
			if err := conn.Request(t.Context(), &vppmsg.MemifDelete{SwIfIndex: m.SwIfIndex}, &vppmsg.MemifDeleteReply{}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("VPP has no memif %s: %s", vppName, v.CLI(t, "show", "memif"))
}
