package descriptor_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// connectPeer runs testpmd as the memif client (a pod side) on socket and
// waits until its link is up.
func connectPeer(t *testing.T, socket, secret string) {
	t.Helper()
	peer, err := testpmd.StartVswitch(t.Context(), testpmd.VswitchConfig{Socket: socket, Secret: secret, Client: true,
		LogPath: filepath.Join(t.TempDir(), "peer.log")})
	if err != nil {
		t.Fatalf("memif peer on %s: %v", socket, err)
	}
	t.Cleanup(func() { peer.Stop() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := peer.WaitLinkUp(ctx); err != nil {
		t.Fatalf("memif peer on %s: %v", socket, err)
	}
}

// TestRxModesOfConnectedMemif: a memif's rx modes wait for its link; once
// its peer connects and the scheduler is told the link is up, VPP's
// queues take them; a change is written to the live link; a restarted
// agent reads them back as the model (no operation) and, told the link is
// up, writes nothing.
func TestRxModesOfConnectedMemif(t *testing.T) {
	v := vpp.Start(t)
	for _, c := range []struct {
		name         string
		created      vpp_interfaces.Interface_RxMode_Type
		wantCreated  string
		changed      vpp_interfaces.Interface_RxMode_Type
		wantChanged  string
		changedQueue bool
	}{
		{name: "interrupt to adaptive", created: vpp_interfaces.Interface_RxMode_INTERRUPT, wantCreated: "interrupt",
			changed: vpp_interfaces.Interface_RxMode_ADAPTIVE, wantChanged: "adaptive"},
		{name: "adaptive to interrupt on queue 0", created: vpp_interfaces.Interface_RxMode_ADAPTIVE, wantCreated: "adaptive",
			changed: vpp_interfaces.Interface_RxMode_INTERRUPT, wantChanged: "interrupt", changedQueue: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "pod-memif-" + strings.Fields(c.wantCreated)[0]
			iface := memif(v.Dir, name, func(i *vpp_interfaces.Interface) {
				i.RxModes = []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: c.created}}
			})
			key := vpp_interfaces.InterfaceKey(name)
			first := startAgent(t, v)
			first.commit(t, map[string]proto.Message{key: iface})
			connectPeer(t, iface.GetMemif().SocketFilename, iface.GetMemif().Secret)

			// The link came up: the scheduler applies the model's modes.
			if links := first.setLinks(t); !links[name].Up {
				t.Fatalf("memif %s is down", name)
			}
			vppName := readVPP(t, v)[name].details.InterfaceName
			if modes := v.RxModes(t, vppName); len(modes) == 0 || slices.ContainsFunc(modes, func(m string) bool { return m != c.wantCreated }) {
				t.Fatalf("VPP's queues of %s after link up are %v, want all %s", vppName, modes, c.wantCreated)
			}

			changed := proto.Clone(iface).(*vpp_interfaces.Interface)
			changed.RxModes = []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: c.changed}}
			if c.changedQueue {
				changed.RxModes = []*vpp_interfaces.Interface_RxMode{{Queue: 0, Mode: c.changed}}
			}
			first.commit(t, map[string]proto.Message{key: changed})
			if modes := v.RxModes(t, vppName); len(modes) == 0 || slices.ContainsFunc(modes, func(m string) bool { return m != c.wantChanged }) {
				t.Errorf("VPP's queues of %s after the live change are %v, want all %s", vppName, modes, c.wantChanged)
			}

			// An agent restart: the resync reads the mode back as the
			// model and, told the link is up, writes nothing.
			v.TraceAPI(t)
			restarted := startAgent(t, v)
			wantNoOps(t, "resync after the change and an agent restart", restarted.resync(t, map[string]proto.Message{key: changed}))
			restarted.setLinks(t)
			if traced := v.TracedAPI(t); slices.Contains(traced, "sw_interface_set_rx_mode") || !slices.Contains(traced, "sw_interface_rx_placement_dump") {
				t.Errorf("after an agent restart VPP received %v, want rx placement read and no sw_interface_set_rx_mode", traced)
			}
			v.CLI(t, "api", "trace", "off")
			restarted.resync(t, nil)
		})
	}
}
