package descriptor_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// connectPeer runs testpmd as the memif client (a pod side) on socket and
// waits until its link is up.
func connectPeer(t *testing.T, socket, secret string) *testpmd.Vswitch {
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
	return peer
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

// TestRxModesFollowTheLink takes a memif's rx modes through the link's
// life: made while the link is down, they wait (VPP is told nothing);
// the link comes up and the scheduler writes them; the model drops them
// and VPP's queues go back to VPP's default (polling); the model gives
// them again; the pod side leaves and the scheduler drops them without an
// error, though VPP has no queues left to write to.
func TestRxModesFollowTheLink(t *testing.T) {
	v := vpp.Start(t)
	const name = "pod-memif"
	key := vpp_interfaces.InterfaceKey(name)
	withModes := func(mode vpp_interfaces.Interface_RxMode_Type) *vpp_interfaces.Interface {
		return memif(v.Dir, name, func(i *vpp_interfaces.Interface) {
			if mode != vpp_interfaces.Interface_RxMode_UNKNOWN {
				i.RxModes = []*vpp_interfaces.Interface_RxMode{{DefaultMode: true, Mode: mode}}
			}
		})
	}
	a := startAgent(t, v)
	v.TraceAPI(t)
	a.commit(t, map[string]proto.Message{key: withModes(vpp_interfaces.Interface_RxMode_INTERRUPT)})
	if traced := v.TracedAPI(t); slices.Contains(traced, "sw_interface_set_rx_mode") {
		t.Errorf("with the link down VPP was sent %v, want no sw_interface_set_rx_mode", traced)
	}
	v.CLI(t, "api", "trace", "off")
	iface := withModes(vpp_interfaces.Interface_RxMode_INTERRUPT).GetMemif()
	peer := connectPeer(t, iface.SocketFilename, iface.Secret)
	a.setLinks(t)
	vppName := readVPP(t, v)[name].details.InterfaceName
	for _, step := range []struct {
		name  string
		mode  vpp_interfaces.Interface_RxMode_Type
		queue string
	}{
		{"link up", vpp_interfaces.Interface_RxMode_INTERRUPT, "interrupt"},
		{"modes dropped", vpp_interfaces.Interface_RxMode_UNKNOWN, "polling"},
		{"modes given again", vpp_interfaces.Interface_RxMode_ADAPTIVE, "adaptive"},
	} {
		for _, op := range a.commit(t, map[string]proto.Message{key: withModes(step.mode)}) {
			if op.NewErr != nil {
				t.Errorf("%s: %s %s: %v", step.name, op.Operation, op.Key, op.NewErr)
			}
		}
		if modes := v.RxModes(t, vppName); len(modes) == 0 || slices.ContainsFunc(modes, func(m string) bool { return m != step.queue }) {
			t.Errorf("%s: VPP's queues of %s are %v, want all %s", step.name, vppName, modes, step.queue)
		}
	}
	peer.Stop()
	poll.Until(t, time.Minute, "the link of "+name+" down", func() error {
		if a.setLinks(t)[name].Up {
			return fmt.Errorf("link up")
		}
		return nil
	})
	for _, txn := range a.scheduler.GetTransactionHistory(time.Time{}, time.Now()) {
		for _, op := range txn.Executed {
			if op.NewErr != nil {
				t.Errorf("transaction %d: %s %s: %v", txn.SeqNum, op.Operation, op.Key, op.NewErr)
			}
		}
	}
	if status := a.scheduler.GetValueStatus(vpp_interfaces.RxModesKey(name)).GetValue(); status.GetState() != kvs.ValueState_PENDING {
		t.Errorf("the rx modes of a memif whose link is down are %v, want pending", status.GetState())
	}
}
