package vswitch

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ligato/cn-infra/logging"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
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

// TestLinkWatcherAppliesRxModesOnlyWhereVPPDiffers runs the link watcher
// over a memif whose pod side (testpmd) is connected: its first check
// puts VPP's new queues in the model's mode; a watcher started afresh, as
// after an agent restart, finds the link up in that mode and sends VPP no
// sw_interface_set_rx_mode.
func TestLinkWatcherAppliesRxModesOnlyWhereVPPDiffers(t *testing.T) {
	v := vpp.Start(t)
	conn := dialVPP(t, v, "links-test")
	const name, secret = "pod-memif", "s3cret"
	socket, vppName := makeMemif(t, v, conn, name, secret)
	waitLinkUp(t, startPodSide(t, socket, secret, ""))

	modes := func(string) []*vpp_interfaces.Interface_RxMode {
		return []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: vpp_interfaces.Interface_RxMode_ADAPTIVE}}
	}
	connFunc := func() (*vppapi.Conn, error) { return conn, nil }
	log := logging.ForPlugin("links-test")
	newLinkWatcher(connFunc, modes, log).check(t.Context())
	if got := v.RxModes(t, vppName); len(got) == 0 || slices.ContainsFunc(got, func(m string) bool { return m != "adaptive" }) {
		t.Fatalf("VPP's queues of %s after the watcher saw the link up are %v, want all adaptive", vppName, got)
	}

	v.TraceAPI(t)
	newLinkWatcher(connFunc, modes, log).check(t.Context())
	traced := v.TracedAPI(t)
	if slices.Contains(traced, "sw_interface_set_rx_mode") || !slices.Contains(traced, "sw_interface_rx_placement_dump") {
		t.Errorf("a restarted watcher sent VPP %v, want its rx placement read and no sw_interface_set_rx_mode", traced)
	}
	if got := v.RxModes(t, vppName); slices.ContainsFunc(got, func(m string) bool { return m != "adaptive" }) {
		t.Errorf("VPP's queues of %s after a restart are %v, want all adaptive", vppName, got)
	}
}
