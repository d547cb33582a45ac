package memifwiring_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// xconnectConf pairs the sender's and the receiver's memifs.
const xconnectConf = "l2-xconnect:\n  - [default/sender/app, default/receiver/app]\n"

const (
	senderInterface   = "memif_default_sender_app_0"
	receiverInterface = "memif_default_receiver_app_0"
)

// vppXConnects reads VPP's L2 cross-connects between tagged interfaces,
// receive interface to transmit interface, through a connection of the
// test's own.
func vppXConnects(t testing.TB, v *vpp.VPP) (map[string]string, error) {
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "memifwiring-test", 0)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	xconnects, err := vppapi.Dump[vppmsg.L2XconnectDetails](t.Context(), conn, &vppmsg.L2XconnectDump{})
	if err != nil {
		return nil, err
	}
	names, err := vppNames(t, conn)
	if err != nil {
		return nil, err
	}
	result := map[string]string{}
	for _, xc := range xconnects {
		result[names[xc.RxSwIfIndex]] = names[xc.TxSwIfIndex]
	}
	return result, nil
}

// waitVPPXConnects waits until VPP's cross-connects are want.
func waitVPPXConnects(t testing.TB, v *vpp.VPP, want map[string]string) {
	t.Helper()
	poll.Until(t, vppWaitLimit, fmt.Sprintf("VPP cross-connects %v", want), func() error {
		got, err := vppXConnects(t, v)
		if err == nil && !maps.Equal(got, want) {
			err = fmt.Errorf("VPP cross-connects %v", got)
		}
		return err
	})
}

// waitReceived waits until the receiving pod side has counted more than
// after packets.
func waitReceived(t testing.TB, rx *testpmd.Vswitch, after uint64) uint64 {
	t.Helper()
	var received uint64
	poll.Until(t, vppWaitLimit, fmt.Sprintf("the receiving pod counts more than %d packets", after), func() error {
		stats, err := rx.Stats(t.Context())
		if err != nil {
			return err
		}
		if received = stats.RxPackets; received <= after {
			return fmt.Errorf("receiver counted %d packets", received)
		}
		return nil
	})
	return received
}

func TestPodToPodThroughVPPCrossConnect(t *testing.T) {
	v := vpp.Start(t)
	dir := vppAgentDir(t)
	lister := newLivePods()
	first := startVPPAgent(t, v, dir, lister, xconnectConf)

	// With one pod of the pair, its cross-connect waits for the other's
	// memif: pending in the agent, nothing in VPP, no error.
	sender := first.addOneMemifPod(t, "sender", "memif-000")
	waitVPPMemifs(t, v, []string{senderInterface})
	if state := first.KVScheduler.GetValueStatus(vpp_l2.XConnectKey(senderInterface)).GetValue().GetState(); state != kvs.ValueState_PENDING {
		t.Errorf("with the receiver missing the sender's cross-connect is %s, want %s", state, kvs.ValueState_PENDING)
	}
	if xconnects, err := vppXConnects(t, v); err != nil || len(xconnects) != 0 {
		t.Errorf("with the receiver missing VPP cross-connects %v (%v), want none", xconnects, err)
	}

	receiver := first.addOneMemifPod(t, "receiver", "memif-001")
	bothWays := map[string]string{senderInterface: receiverInterface, receiverInterface: senderInterface}
	waitVPPXConnects(t, v, bothWays)
	rx := startPodSide(t, receiver.Annotations[dmapi.AnnotationSocketHost], receiver.Envs[dmapi.EnvMemifSecret], "rxonly")
	tx := startPodSide(t, sender.Annotations[dmapi.AnnotationSocketHost], sender.Envs[dmapi.EnvMemifSecret], "txonly")
	for _, side := range []*testpmd.Vswitch{rx, tx} {
		if err := waitLinkUp(t, side); err != nil {
			t.Fatal(err)
		}
	}
	received := waitReceived(t, rx, 0)

	// An agent restart finds VPP as it should be: nothing changes, and
	// packets go on flowing.
	lister.set([]podapi.PodState{
		{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "sender"}, UID: "uid-sender"}, Containers: []podapi.PodContainer{container("app", sender)}},
		{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "receiver"}, UID: "uid-receiver"}, Containers: []podapi.PodContainer{container("app", receiver)}},
	})
	first.Stop()
	second := startVPPAgent(t, v, dir, lister, xconnectConf)
	waitVPPMemifs(t, v, []string{receiverInterface, senderInterface})
	for _, key := range []string{vpp_l2.XConnectKey(senderInterface), vpp_l2.XConnectKey(receiverInterface)} {
		if state := second.KVScheduler.GetValueStatus(key).GetValue().GetState(); state != kvs.ValueState_CONFIGURED {
			t.Errorf("after the agent restart %s is %s, want %s", key, state, kvs.ValueState_CONFIGURED)
		}
	}
	wantNoChanges(t, second, "restarted agent")
	waitVPPXConnects(t, v, bothWays)
	waitReceived(t, rx, received)

	// Deleting the sender takes both directions down, then its memif.
	tx.Stop()
	second.Push(t, &podapi.DeletePod{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "sender"}, UID: "uid-sender"}})
	second.Barrier(t)
	waitVPPMemifs(t, v, []string{receiverInterface})
	waitVPPXConnects(t, v, map[string]string{})
	wantXConnectsRemovedFirst(t, second, senderInterface)
}

// wantXConnectsRemovedFirst fails t unless the agent removed both
// cross-connects of iface before the interface, without errors.
func wantXConnectsRemovedFirst(t testing.TB, a *vppAgent, iface string) {
	t.Helper()
	var order []string
	for _, txn := range a.KVScheduler.GetTransactionHistory(time.Time{}, time.Now()) {
		for _, op := range txn.Executed {
			if op.NewErr != nil {
				t.Errorf("transaction %d (%s): %s %s failed: %v", txn.SeqNum, txn.Description, op.Operation, op.Key, op.NewErr)
			}
			if op.Key == vpp_interfaces.InterfaceKey(iface) || vpp_l2.ModelXConnectPair.IsKeyValid(op.Key) {
				order = append(order, fmt.Sprintf("%s %s", op.Operation, op.Key))
			}
		}
	}
	last := len(order) - 1
	if len(order) != 3 || !strings.HasSuffix(order[last], vpp_interfaces.InterfaceKey(iface)) ||
		slices.ContainsFunc(order[:last], func(op string) bool { return !strings.Contains(op, "xconnect") }) {
		t.Errorf("the agent changed %v, want both cross-connects of %s removed, then the interface", order, iface)
	}
}

// TestRestartSwitchesBetweenCrossConnectAndBridgeDomain: an agent
// restarted with memifwiring.conf changed from l2-xconnect to bridge-domain
// moves the pods' memifs from the cross-connect into the bridge domain, and
// back again; a VPP restart gets the cross-connects back.
func TestRestartSwitchesBetweenCrossConnectAndBridgeDomain(t *testing.T) {
	v := vpp.Start(t)
	dir := vppAgentDir(t)
	lister := newLivePods()
	a := startVPPAgent(t, v, dir, lister, xconnectConf)
	sender, receiver := a.addOneMemifPod(t, "sender", "memif-000"), a.addOneMemifPod(t, "receiver", "memif-001")
	lister.set([]podapi.PodState{
		{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "sender"}, UID: "uid-sender"}, Containers: []podapi.PodContainer{container("app", sender)}},
		{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "receiver"}, UID: "uid-receiver"}, Containers: []podapi.PodContainer{container("app", receiver)}},
	})
	bothWays := map[string]string{senderInterface: receiverInterface, receiverInterface: senderInterface}
	waitVPPXConnects(t, v, bothWays)

	for _, step := range []struct {
		wiringConf string
		xconnects  map[string]string
		bridged    int
	}{
		{"bridge-domain: pods\n", map[string]string{}, 2},
		{xconnectConf, bothWays, 0},
	} {
		a.Stop()
		a = startVPPAgent(t, v, dir, lister, step.wiringConf)
		waitVPPXConnects(t, v, step.xconnects)
		poll.Until(t, vppWaitLimit, fmt.Sprintf("%d memifs in the bridge domain with %q", step.bridged, step.wiringConf), func() error {
			if members := bridgeDomainMembers(t, v, "pods"); max(members, 0) != step.bridged {
				return fmt.Errorf("VPP's bridge domain tagged pods has %d interfaces", members)
			}
			return nil
		})
		// Nothing undoes the other after the restart's resync settled.
		a.Barrier(t)
		if members := bridgeDomainMembers(t, v, "pods"); max(members, 0) != step.bridged {
			t.Errorf("with %q VPP's bridge domain has %d interfaces, want %d", step.wiringConf, members, step.bridged)
		}
		if xconnects, err := vppXConnects(t, v); err != nil || !maps.Equal(xconnects, step.xconnects) {
			t.Errorf("with %q VPP cross-connects %v (%v), want %v", step.wiringConf, xconnects, err, step.xconnects)
		}
	}

	// A restarted VPP gets the cross-connects back with the interfaces.
	v.Restart(t)
	waitVPPMemifs(t, v, []string{receiverInterface, senderInterface})
	waitVPPXConnects(t, v, bothWays)
}
