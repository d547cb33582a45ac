package descriptor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/ligato/cn-infra/config"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// schedulerConfig is kvscheduler.conf: no transaction summary on stdout.
type schedulerConfig string

func (f schedulerConfig) LoadValue(value interface{}) (bool, error) {
	return true, config.ParseConfigFromYamlFile(string(f), value)
}

func (f schedulerConfig) GetConfigName() string { return string(f) }

// agent is what the vswitch plugin builds: the real KV scheduler with
// every descriptor of the package registered, over its own connection to
// VPP. A second agent over the same VPP is an agent restart.
type agent struct {
	scheduler *kvscheduler.Scheduler
	conn      *vppapi.Conn
	// links tells the scheduler the memifs' link states, as the vswitch's
	// link watcher does.
	links *descriptor.LinkStates
	stop  func()
}

// running is the agent the test started last. Starting another stops it
// first, as an agent restart does: two schedulers running transactions at
// once share vpp-agent's package-level statistics, which is a data race.
var running *agent

func startAgent(t testing.TB, v *vpp.VPP) *agent {
	t.Helper()
	if running != nil {
		running.stop()
	}
	conn, err := vppapi.Dial(t.Context(), v.APISocket, "descriptor-test", 0)
	if err != nil {
		t.Fatalf("connect to VPP: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	conf := filepath.Join(t.TempDir(), "kvscheduler.conf")
	if err := os.WriteFile(conf, []byte("print-txn-summary: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) {
		deps.HTTPHandlers = nil
		deps.Cfg = schedulerConfig(conf)
	}))
	if err := scheduler.Init(); err != nil {
		t.Fatalf("scheduler Init: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			scheduler.Close()
			conn.Close()
		})
	}
	t.Cleanup(stop)
	connFunc := func() (*vppapi.Conn, error) { return conn, nil }
	interfaces := descriptor.NewInterfaces(connFunc)
	links := interfaces.WithLinkStates(scheduler.PushSBNotification)
	bridgeDomains := descriptor.NewBridgeDomains(connFunc, interfaces.Index())
	for _, d := range []*kvs.KVDescriptor{interfaces.Descriptor(), links.Descriptor(),
		descriptor.NewRxModes(connFunc, interfaces.Index()).Descriptor(), descriptor.NewVrfTables(connFunc).Descriptor(),
		descriptor.NewRoutes(connFunc, interfaces.Index()).Descriptor(), bridgeDomains.Descriptor(), bridgeDomains.InterfaceDescriptor(),
		descriptor.NewXConnects(connFunc, interfaces.Index()).Descriptor()} {
		if err := scheduler.RegisterKVDescriptor(d); err != nil {
			t.Fatalf("register %s: %v", d.Name, err)
		}
	}
	running = &agent{scheduler: scheduler, conn: conn, links: links, stop: stop}
	return running
}

// commit applies changes (a nil value deletes) and returns the
// operations the scheduler executed.
func (a *agent) commit(t testing.TB, changes map[string]proto.Message) kvs.RecordedTxnOps {
	t.Helper()
	txn := a.scheduler.StartNBTransaction()
	for key, value := range changes {
		txn.SetValue(key, value)
	}
	seq, err := txn.Commit(context.Background())
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return a.scheduler.GetRecordedTransaction(seq).Executed
}

// resync is the agent's full resync: VPP is read back and made to hold
// exactly values. It returns the operations executed.
func (a *agent) resync(t testing.TB, values map[string]proto.Message) kvs.RecordedTxnOps {
	t.Helper()
	txn := a.scheduler.StartNBTransaction()
	for key, value := range values {
		txn.SetValue(key, value)
	}
	seq, err := txn.Commit(kvs.WithResync(context.Background(), kvs.FullResync, true))
	if err != nil {
		t.Fatalf("resync: %v", err)
	}
	return a.scheduler.GetRecordedTransaction(seq).Executed
}

// wantNoOps fails t if ops changed anything. An operation the scheduler
// records as NOOP changes nothing in VPP (a value left pending, such as
// the rx modes of a memif whose link is down).
func wantNoOps(t testing.TB, what string, ops kvs.RecordedTxnOps) {
	t.Helper()
	for _, op := range ops {
		if !op.NOOP {
			t.Errorf("%s: %s %s", what, op.Operation, op.Key)
		}
	}
}

// setLinks tells the scheduler each memif's link as VPP holds it, as the
// vswitch's link watcher does when VPP's events name them, and waits for
// the scheduler to hold it (the transaction of a link state also makes
// or removes the values that wait for it).
func (a *agent) setLinks(t testing.TB) map[string]descriptor.Link {
	t.Helper()
	links, err := descriptor.ReadLinks(t.Context(), a.conn)
	if err != nil {
		t.Fatal(err)
	}
	for name, link := range links {
		if err := a.links.Set(name, link.Up); err != nil {
			t.Fatal(err)
		}
		key := vpp_interfaces.LinkStateKey(name, link.Up)
		poll.Until(t, 30*time.Second, "the KV scheduler holds "+key, func() error {
			if state := a.scheduler.GetValueStatus(key).GetValue().GetState(); state != kvs.ValueState_OBTAINED {
				return fmt.Errorf("%s is %s", key, state)
			}
			return nil
		})
	}
	return links
}

// vppInterface is what VPP reports of one interface of the agent's.
type vppInterface struct {
	details *vppmsg.SwInterfaceDetails
	memif   *vppmsg.MemifDetails
	vrf     [2]uint32
	// unnumberedTo is the name of the interface it borrows addresses from.
	unnumberedTo string
	addresses    []string
}

// readVPP returns VPP's interfaces of the agent's by name (their tag
// after owner.Prefix), read with a connection of the test's own.
func readVPP(t testing.TB, v *vpp.VPP) map[string]*vppInterface {
	t.Helper()
	ctx := t.Context()
	conn, err := vppapi.Dial(ctx, v.APISocket, "descriptor-test-reader", 0)
	if err != nil {
		t.Fatalf("connect to VPP: %v", err)
	}
	defer conn.Close()
	details := dump[vppmsg.SwInterfaceDetails](t, conn, &vppmsg.SwInterfaceDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	memifs := dump[vppmsg.MemifDetails](t, conn, &vppmsg.MemifDump{})
	unnumbered := dump[vppmsg.IPUnnumberedDetails](t, conn, &vppmsg.IPUnnumberedDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	tags := map[vppmsg.InterfaceIndex]string{}
	result := map[string]*vppInterface{}
	for _, d := range details {
		name, ours := owner.Name(d.Tag)
		if !ours {
			continue
		}
		tags[d.SwIfIndex] = name
		iface := &vppInterface{details: d}
		for i, ipv6 := range []bool{false, true} {
			var table vppmsg.SwInterfaceGetTableReply
			if err := conn.Request(ctx, &vppmsg.SwInterfaceGetTable{SwIfIndex: d.SwIfIndex, IsIPv6: ipv6}, &table); err != nil {
				t.Fatal(err)
			}
			iface.vrf[i] = table.VrfID
			for _, address := range dump[vppmsg.IPAddressDetails](t, conn, &vppmsg.IPAddressDump{SwIfIndex: d.SwIfIndex, IsIPv6: ipv6}) {
				iface.addresses = append(iface.addresses, prefixString(address.Prefix))
			}
		}
		result[name] = iface
	}
	for _, m := range memifs {
		if iface := result[tags[m.SwIfIndex]]; iface != nil {
			iface.memif = m
		}
	}
	for _, u := range unnumbered {
		if iface := result[tags[u.SwIfIndex]]; iface != nil {
			iface.unnumberedTo = tags[u.IPSwIfIndex]
		}
	}
	return result
}

func dump[D any, PD interface {
	*D
	vppmsg.Reply
}](t testing.TB, conn *vppapi.Conn, req vppmsg.Request) []PD {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	details, err := vppapi.Dump[D, PD](ctx, conn, req)
	if err != nil {
		t.Fatalf("%s: %v", req.MessageName(), err)
	}
	return details
}
