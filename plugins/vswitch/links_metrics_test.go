package vswitch

import (
	"fmt"
	"sync"
	"testing"
	"time"

	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// toldEvents records what the link watcher tells.
type toldEvents struct {
	mu          sync.Mutex
	wrongSecret []string
	linkDown    []string
}

func (e *toldEvents) WrongSecret(link vswitchapi.MemifLink) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wrongSecret = append(e.wrongSecret, link.Name)
}

func (e *toldEvents) LinkDown(link vswitchapi.MemifLink, _ time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.linkDown = append(e.linkDown, link.Name)
}

func (e *toldEvents) told() (wrongSecret, linkDown []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.wrongSecret...), append([]string(nil), e.linkDown...)
}

// watcherOn returns a link watcher over a real VPP's connection,
// subscribed to its interface events, telling events, on a clock the test
// moves, and the link states it tells the KV scheduler.
func watcherOn(t *testing.T, conn *vppapi.Conn, events vswitchapi.LinkEvents, clock *time.Time) (*linkWatcher, *pushedStates) {
	connFunc := func() (*vppapi.Conn, error) { return conn, nil }
	pushed := &pushedStates{}
	w := newLinkWatcher(connFunc, descriptor.NewLinkStates(pushed.push), descriptor.NewInterfaces(connFunc).Index(), testlog.New(t))
	w.events, w.grace = events, 30*time.Second
	w.now = func() time.Time { return *clock }
	w.connected(t.Context(), conn)
	return w, pushed
}

// pushedStates records the link states told to the KV scheduler, each
// removal as "removed <key>", before what was set in the same push.
type pushedStates struct {
	mu   sync.Mutex
	keys []string
}

func (p *pushedStates) push(values ...kvs.KVWithMetadata) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, kv := range values {
		if kv.Value == nil {
			p.keys = append(p.keys, "removed "+kv.Key)
		}
	}
	for _, kv := range values {
		if kv.Value != nil {
			p.keys = append(p.keys, kv.Key)
		}
	}
	return nil
}

func (p *pushedStates) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.keys) == 0 {
		return ""
	}
	return p.keys[len(p.keys)-1]
}

func linkOf(w *linkWatcher, name string) (vswitchapi.MemifLink, error) {
	for _, link := range w.lastLinks() {
		if link.Name == name {
			return link, nil
		}
	}
	return vswitchapi.MemifLink{}, fmt.Errorf("no link %s in %+v", name, w.lastLinks())
}

// TestMemifCountersMoveWithTraffic: a pod side (testpmd, txonly) sends
// into a memif of the agent's; the watcher shows the link up and VPP's rx
// counters growing between two checks.
func TestMemifCountersMoveWithTraffic(t *testing.T) {
	v := vpp.Start(t)
	conn := dialVPP(t, v, "counters-test")
	const name, secret = "memif_default_web_app_0", "s3cret"
	socket, vppName := makeMemif(t, v, conn, name, secret)
	// Alone in a bridge domain: VPP floods what arrives to no one, and
	// counts it dropped.
	v.CLI(t, "set", "interface", "l2", "bridge", vppName, "7")
	waitLinkUp(t, startPodSide(t, socket, secret, "txonly"))
	clock := time.Unix(1000, 0)
	events := &toldEvents{}
	w, _ := watcherOn(t, conn, events, &clock)
	var first vswitchapi.MemifLink
	poll.Until(t, time.Minute, "packets counted on "+vppName, func() error {
		w.check(t.Context())
		var err error
		first, err = linkOf(w, name)
		if err == nil && (!first.Up || first.Counters.RxPackets == 0) {
			err = fmt.Errorf("link %+v", first)
		}
		return err
	})
	poll.Until(t, time.Minute, "more packets counted on "+vppName, func() error {
		w.check(t.Context())
		later, err := linkOf(w, name)
		if err == nil && (later.Counters.RxPackets <= first.Counters.RxPackets || later.Counters.RxBytes <= first.Counters.RxBytes) {
			err = fmt.Errorf("counters %+v, first %+v", later.Counters, first.Counters)
		}
		return err
	})
	if link, _ := linkOf(w, name); link.Counters.Drops == 0 || link.VPPName != vppName {
		t.Errorf("link %+v: want VPP's drops of the packets it has nowhere to send, on %s", link, vppName)
	}
	if wrongSecret, linkDown := events.told(); len(wrongSecret)+len(linkDown) != 0 {
		t.Errorf("a link up was told wrong secret %v, down %v", wrongSecret, linkDown)
	}
}

// TestWrongSecretAndLinkDownAreTold: a link waiting for its pod side is
// told nothing; a pod side with another secret is refused by VPP:
// WrongSecret is told once, and LinkDown once the link has been refused
// for the grace, not before, and not again.
func TestWrongSecretAndLinkDownAreTold(t *testing.T) {
	v := vpp.Start(t)
	conn := dialVPP(t, v, "secret-test")
	const name = "memif_default_web_app_0"
	socket, _ := makeMemif(t, v, conn, name, "right-secret")
	clock := time.Unix(1000, 0)
	events := &toldEvents{}
	w, _ := watcherOn(t, conn, events, &clock)
	w.check(t.Context())
	if link, err := linkOf(w, name); err != nil || link.Up || !link.DownSince.Equal(clock) {
		t.Fatalf("link before any pod side: %+v, %v; want down since the first check", link, err)
	}
	// A pod side that has not come yet is waited for, however long.
	clock = clock.Add(time.Hour)
	w.check(t.Context())
	if wrongSecret, linkDown := events.told(); len(wrongSecret)+len(linkDown) != 0 {
		t.Fatalf("a link waiting for its pod side was told wrong secret %v, down %v", wrongSecret, linkDown)
	}
	startPodSide(t, socket, "wrong-secret", "")
	poll.Until(t, time.Minute, "VPP refusing the wrong secret", func() error {
		w.check(t.Context())
		if wrongSecret, _ := events.told(); len(wrongSecret) != 1 || wrongSecret[0] != name {
			return fmt.Errorf("wrong secret told for %v", wrongSecret)
		}
		return nil
	})
	if _, linkDown := events.told(); len(linkDown) != 0 {
		t.Fatalf("link down told %v before the grace", linkDown)
	}
	clock = clock.Add(30 * time.Second)
	w.check(t.Context())
	w.check(t.Context())
	wrongSecret, linkDown := events.told()
	if len(linkDown) != 1 || linkDown[0] != name || len(wrongSecret) != 1 {
		t.Errorf("after the grace: link down told %v, wrong secret %v; want each once for %s", linkDown, wrongSecret, name)
	}
}
