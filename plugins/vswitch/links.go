package vswitch

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/plugins/vswitch/descriptor"
)

// linkWatcher follows the memifs' links through VPP's interface events
// and logs each change: a link that comes up, goes down, or is refused (a
// wrong secret shows as VPP's "incorrect secret"). It tells the KV
// scheduler each link's state (descriptor.LinkStates), so that the rx
// modes, which wait for a link up, are written by the scheduler. It keeps
// what it knows for MemifLinks, and tells events of a wrong secret and of
// a link refused or left by its pod side for longer than grace.
//
// An event names an interface whose admin or link state changed, or that
// was made or deleted, with its state: a link known is up or down as the
// event says, an interface not known is read alone. After each
// connection it takes every memif's link from the resync's Retrieve
// (descriptor.LinkStates.OnRetrieve), or reads them itself at the next
// period if none came. VPP emits nothing when it refuses a pod side, whose
// link never came up: each period, while links are down, one show memif
// reads why, and one show interface the counters.
type linkWatcher struct {
	conn   descriptor.ConnFunc
	states *descriptor.LinkStates
	names  descriptor.InterfaceIndex
	log    logs.Logger
	// events is told of wrong secrets and links down past grace; nil:
	// nothing is told.
	events vswitchapi.LinkEvents
	grace  time.Duration
	now    func() time.Time

	// wake tells the watcher goroutine that events or a connection came.
	wake chan struct{}

	// known, downSince, troubleSince and warned are the watcher
	// goroutine's own.
	known     map[string]descriptor.Link
	downSince map[string]time.Time
	// troubleSince is when each link was first seen down with a reason:
	// VPP refused its pod side, or the pod side left.
	troubleSince map[string]time.Time
	// warned are the links down whose LinkDown was told.
	warned map[string]bool

	mu sync.Mutex
	// changed are the interfaces VPP's events named since the watcher
	// last read them, each with its last event.
	changed map[vppmsg.InterfaceIndex]*vppmsg.SwInterfaceEvent
	// reread: every memif is to be read at the next period (a new
	// connection whose resync has not read them yet, or a read that
	// failed).
	reread bool
	// retrieved are the links the last Retrieve read, until the watcher
	// takes them.
	retrieved map[string]descriptor.Link
	// last is what the watcher knows, for MemifLinks.
	last []vswitchapi.MemifLink
}

func newLinkWatcher(conn descriptor.ConnFunc, states *descriptor.LinkStates, names descriptor.InterfaceIndex, log logs.Logger) *linkWatcher {
	w := &linkWatcher{conn: conn, states: states, names: names, log: log, now: time.Now, wake: make(chan struct{}, 1),
		known: map[string]descriptor.Link{}, downSince: map[string]time.Time{}, troubleSince: map[string]time.Time{}, warned: map[string]bool{},
		changed: map[vppmsg.InterfaceIndex]*vppmsg.SwInterfaceEvent{}}
	states.OnRetrieve(w.linksRetrieved)
	return w
}

// connected subscribes to conn's interface events and has every memif
// read anew (VPP may have restarted, or links changed while the agent was
// not connected): by the resync that follows, or else at the next period.
func (w *linkWatcher) connected(ctx context.Context, conn *vppapi.Conn) {
	if err := vppapi.WatchInterfaceEvents(ctx, conn, w.interfaceEvent); err != nil {
		w.log.WarnS("memif link events not watched: links are read again at the next connection", "err", err)
	}
	w.mu.Lock()
	w.reread = true
	w.mu.Unlock()
}

// linksRetrieved runs in the KV scheduler's Retrieve: it hands the links
// over and returns.
func (w *linkWatcher) linksRetrieved(links map[string]descriptor.Link) {
	w.mu.Lock()
	w.retrieved = links
	w.mu.Unlock()
	w.signal()
}

// interfaceEvent runs on the connection's reader goroutine: it notes the
// interface and returns.
func (w *linkWatcher) interfaceEvent(event *vppmsg.SwInterfaceEvent) {
	w.mu.Lock()
	w.changed[event.SwIfIndex] = event
	w.mu.Unlock()
	w.signal()
}

func (w *linkWatcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *linkWatcher) run(ctx context.Context, period time.Duration) {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			w.update(ctx)
		case <-ticker.C:
			w.check(ctx)
		}
	}
}

// update takes the links a Retrieve read, then reads those the events
// named.
func (w *linkWatcher) update(ctx context.Context) {
	conn, err := w.conn()
	if err != nil {
		w.setLast(nil)
		return
	}
	w.mu.Lock()
	changed, retrieved := w.changed, w.retrieved
	w.changed, w.retrieved = map[vppmsg.InterfaceIndex]*vppmsg.SwInterfaceEvent{}, nil
	if retrieved != nil {
		w.reread = false
	}
	w.mu.Unlock()
	if retrieved != nil {
		w.replace(retrieved)
	}
	if err = w.read(ctx, conn, changed); err != nil {
		w.readFailed(ctx, err)
	}
	w.setLast(w.track(nil))
}

// readFailed has every memif read at the next period.
func (w *linkWatcher) readFailed(ctx context.Context, err error) {
	if ctx.Err() == nil {
		w.log.DebugS("reading memif links failed", "err", err)
	}
	w.mu.Lock()
	w.reread = true
	w.mu.Unlock()
}

// readAll reads every memif's link, after a connection whose resync did
// not.
func (w *linkWatcher) readAll(ctx context.Context, conn *vppapi.Conn) error {
	links, err := descriptor.ReadLinks(ctx, conn)
	if err != nil {
		return err
	}
	w.replace(links)
	return nil
}

// replace makes links the links known.
func (w *linkWatcher) replace(links map[string]descriptor.Link) {
	for name := range w.known {
		if _, ok := links[name]; !ok {
			w.gone(name)
		}
	}
	for _, link := range links {
		w.saw(link)
	}
}

// read follows the events of the interfaces changed. A link known is up
// or down as its event says (VPP's flags), and read only to learn why it
// went down (a pod side that left says why); one deleted is forgotten; an
// interface not known is read once set admin up or its link up: the agent
// makes a memif admin down, tags it, then sets it up, so the event of its
// making names no memif of the agent's yet. An event that says deleted and
// admin up (VPP sends a deletion and a making close together as one) is
// read.
func (w *linkWatcher) read(ctx context.Context, conn *vppapi.Conn, changed map[vppmsg.InterfaceIndex]*vppmsg.SwInterfaceEvent) error {
	wentDown := map[string]descriptor.Link{}
	for index, event := range changed {
		name, known := w.knownAt(index)
		// The flags say what changed: admin up, link up, or neither.
		adminUp := event.Flags&vppmsg.IfStatusAPIFlagAdminUp != 0
		switch {
		case event.Deleted && !adminUp:
			if known {
				w.gone(name)
			}
			continue
		case !known && event.Flags == 0:
			continue
		case known && !event.Deleted:
			link := w.known[name]
			link.Up = event.Flags&vppmsg.IfStatusAPIFlagLinkUp != 0
			if link.Up || !w.known[name].Up {
				w.saw(link)
			} else {
				wentDown[name] = link
			}
			continue
		}
		link, found, err := descriptor.ReadLink(ctx, conn, index, w.names)
		if err != nil {
			return err
		}
		if known && (!found || name != link.Name) {
			w.gone(name)
		}
		if found {
			w.saw(link)
		}
	}
	if err := descriptor.ReadDownReasons(ctx, conn, wentDown); err != nil {
		return err
	}
	for _, link := range wentDown {
		w.saw(link)
	}
	return nil
}

// knownAt returns the name of the link known at index.
func (w *linkWatcher) knownAt(index vppmsg.InterfaceIndex) (string, bool) {
	for name, link := range w.known {
		if link.Index == index {
			return name, true
		}
	}
	return "", false
}

// saw records link as read, logging and telling the KV scheduler a change.
func (w *linkWatcher) saw(link descriptor.Link) {
	before, seen := w.known[link.Name]
	w.known[link.Name] = link
	if seen && before.Up == link.Up && before.DownReason == link.DownReason {
		return
	}
	w.logChange(link)
	if !seen || before.Up != link.Up {
		if err := w.states.Set(link.Name, link.Up); err != nil {
			w.log.WarnS("memif link state not kept", "memif", link.Name, "err", err)
		}
	}
}

func (w *linkWatcher) gone(name string) {
	delete(w.known, name)
	if err := w.states.Forget(name); err != nil {
		w.log.WarnS("memif link state not forgotten", "memif", name, "err", err)
	}
}

func (w *linkWatcher) logChange(link descriptor.Link) {
	switch {
	case link.Up:
		w.log.InfoS("memif link up: the pod side connected", "memif", link.Name, "vppName", link.VPPName, "socket", link.Socket)
	case link.DownReason == vswitchapi.WrongSecret:
		w.log.WarnS("memif link down: VPP refused the pod side: incorrect secret; the pod must use the MEMIF_SECRET of its current allocation (memifctl get)",
			"memif", link.Name, "vppName", link.VPPName, "socket", link.Socket)
	case link.DownReason != "":
		w.log.WarnS("memif link down", "memif", link.Name, "vppName", link.VPPName, "socket", link.Socket, "reason", link.DownReason)
	default:
		w.log.InfoS("memif link down: waiting for the pod side", "memif", link.Name, "vppName", link.VPPName, "socket", link.Socket)
	}
}

// check is the periodic look: why the links down are (VPP refuses a pod
// side without an event), the counters, and the grace of links down,
// after what events named or a read that failed.
func (w *linkWatcher) check(ctx context.Context) {
	conn, err := w.conn()
	if err != nil {
		w.setLast(nil)
		return
	}
	w.update(ctx)
	w.mu.Lock()
	reread := w.reread
	w.reread = false
	w.mu.Unlock()
	switch {
	case reread:
		if err := w.readAll(ctx, conn); err != nil {
			w.readFailed(ctx, err)
		}
	default:
		// VPP refuses the whole show memif when one of the memifs is
		// gone meanwhile; its deletion event will tell.
		if err := w.readDownReasons(ctx, conn); err != nil && ctx.Err() == nil {
			w.log.DebugS("reading why memif links are down failed", "err", err)
		}
	}
	w.setLast(w.track(w.readCounters(ctx, conn)))
}

// readDownReasons reads why the links down are.
func (w *linkWatcher) readDownReasons(ctx context.Context, conn *vppapi.Conn) error {
	links := maps.Clone(w.known)
	if err := descriptor.ReadDownReasons(ctx, conn, links); err != nil {
		return err
	}
	for _, link := range links {
		w.saw(link)
	}
	return nil
}

// readCounters reads the links' counters; none when VPP does not answer
// (the metrics then show the counters read before, not zeros).
func (w *linkWatcher) readCounters(ctx context.Context, conn *vppapi.Conn) map[string]descriptor.Counters {
	names := make([]string, 0, len(w.known))
	for _, link := range w.known {
		names = append(names, link.VPPName)
	}
	slices.Sort(names)
	counters, err := descriptor.ReadCounters(ctx, conn, names)
	if err != nil {
		if ctx.Err() == nil {
			w.log.DebugS("reading memif counters failed", "err", err)
		}
		return nil
	}
	return counters
}

// track records since when each link is down and tells events what they
// are owed, then returns the links as MemifLinks, with counters where
// given and those read before otherwise.
func (w *linkWatcher) track(counters map[string]descriptor.Counters) []vswitchapi.MemifLink {
	now := w.now()
	previous := map[string]vswitchapi.MemifLink{}
	for _, link := range w.lastLinks() {
		previous[link.Name] = link
	}
	var result []vswitchapi.MemifLink
	for _, name := range slices.Sorted(maps.Keys(w.known)) {
		link := w.known[name]
		memif := vswitchapi.MemifLink{Name: name, VPPName: link.VPPName, Up: link.Up, DownReason: link.DownReason,
			Counters: previous[name].Counters}
		if c, ok := counters[link.VPPName]; ok {
			memif.Counters = vswitchapi.Counters(c)
		}
		if link.Up {
			w.forget(name)
		} else {
			memif.DownSince = since(w.downSince, name, now)
			if link.DownReason != "" {
				w.tell(memif, previous[name], since(w.troubleSince, name, now), now)
			}
		}
		result = append(result, memif)
	}
	for name := range w.downSince {
		if _, ok := w.known[name]; !ok {
			w.forget(name)
		}
	}
	return result
}

// since returns when name was first put in times, putting it at now the
// first time.
func since(times map[string]time.Time, name string, now time.Time) time.Time {
	at, ok := times[name]
	if !ok {
		at = now
		times[name] = at
	}
	return at
}

// forget forgets a link up or gone.
func (w *linkWatcher) forget(name string) {
	delete(w.downSince, name)
	delete(w.troubleSince, name)
	delete(w.warned, name)
}

// tell tells events of a link down with a reason since trouble: a wrong
// secret newly refused, and, once, a link down so for longer than the
// grace. A link whose pod side never came (no reason) is waiting, not in
// trouble: a pod may start its data plane whenever it likes.
func (w *linkWatcher) tell(link, previous vswitchapi.MemifLink, trouble, now time.Time) {
	if w.events == nil {
		return
	}
	if link.DownReason == vswitchapi.WrongSecret && (previous.Name == "" || previous.Up || previous.DownReason != link.DownReason) {
		w.events.WrongSecret(link)
	}
	if !w.warned[link.Name] && now.Sub(trouble) >= w.grace {
		w.warned[link.Name] = true
		w.events.LinkDown(link, w.grace)
	}
}

func (w *linkWatcher) setLast(links []vswitchapi.MemifLink) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = links
}

func (w *linkWatcher) lastLinks() []vswitchapi.MemifLink {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}
