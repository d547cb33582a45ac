package wiring

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/internal/logs"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	crossnodeapi "github.com/contivpp/memif-agent/plugins/crossnode/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	networksapi "github.com/contivpp/memif-agent/plugins/networks/api"
	"github.com/contivpp/memif-agent/plugins/networks/assign"
	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// wiredPod is what the handler put into transactions for one pod.
type wiredPod struct {
	uid  string
	keys []string
	// allocations are the IDs of the pod's allocations.
	allocations []string
	// members are the interface names of each l2 network's memifs, and
	// gateways each l3 network's gateway.
	members  map[string][]string
	gateways map[string]netip.Prefix
}

// undo restores the records of the pods an Update changed as they were.
type undo struct {
	event controllerapi.Event
	// before is each pod's record; nil when it had none.
	before map[podapi.PodID]*wiredPod
	// assigned is the assigner's state before the Update.
	assigned assign.State
}

// Options are the handler's optional collaborators.
type Options struct {
	// Networks hands out the networks at a resync; nil: none (every memif
	// is wired as Config says).
	Networks networksapi.Source
	// Span hands out how the networks span nodes at a resync; nil: they
	// end at the node.
	Span crossnodeapi.SpanSource
	// Assigner holds the memifs' specs and addresses; nil: one that keeps
	// nothing on disk.
	Assigner *assign.Assigner
	// Recorder gets what each allocation's memifs got and writes their
	// memif.json; nil: neither.
	Recorder dmapi.NetworkRecorder
	// Metrics is where the handler registers its metrics; nil: none.
	Metrics prometheus.Registerer
	// Events tells pods, as Kubernetes Events, of each memif refused or
	// wired by an update; nil: nothing is told.
	Events PodEvents
	// Log gets refusals; nil: none.
	Log logs.Logger
}

// Handler is the controller event handler of the vswitch-side memif
// interfaces. Its methods are called only from the controller event loop.
type Handler struct {
	devices  dmapi.DeviceManagerAPI
	config   Config
	opts     Options
	assigner *assign.Assigner
	metrics  *metrics
	wired    map[podapi.PodID]wiredPod
	// networkKeys are the keys of the networks' own values last put.
	networkKeys []string
	// span is how the networks span nodes, as last read or pushed.
	span crossnodeapi.Span
	// told is what each allocation's memifs were last told (the device
	// manager's record, memif.json), by allocation ID.
	told map[string]toldAllocation
	last *undo
	// wiringFollowed: the first resync moved the memifs that follow
	// memifwiring.conf (assign.FollowWiring).
	wiringFollowed bool
}

// toldAllocation is what was last recorded and written for an
// allocation.
type toldAllocation struct {
	networks  []dmapi.MemifNetwork
	memifJSON []byte
}

var _ controllerapi.EventHandler = (*Handler)(nil)

// NewHandler returns a handler reading devices; config must be valid.
func NewHandler(devices dmapi.DeviceManagerAPI, config Config, opts Options) (*Handler, error) {
	if opts.Log == nil {
		opts.Log = logs.Discard()
	}
	h := &Handler{devices: devices, config: config, opts: opts, assigner: opts.Assigner,
		wired: map[podapi.PodID]wiredPod{}, told: map[string]toldAllocation{}}
	if h.assigner == nil {
		h.assigner, _ = assign.Open("")
	}
	h.assigner.SetWiringBridgeDomain(config.BridgeDomain)
	var err error
	if h.metrics, err = newMetrics(opts.Metrics); err != nil {
		return nil, fmt.Errorf("memif wiring metrics: %w", err)
	}
	return h, nil
}

// String implements controllerapi.EventHandler.
func (h *Handler) String() string { return "memifwiring" }

// HandlesEvent implements controllerapi.EventHandler: resyncs, AddPod,
// DeletePod, NetworksChanged, PrepareClaim (its memifs' specs are
// checked and recorded), and AllocateDevice: the loop asks before any
// handler runs, and the device manager may take devices over from wired
// pods in it.
func (h *Handler) HandlesEvent(event controllerapi.Event) bool {
	switch event.(type) {
	case podapi.AddPodEvent, podapi.DeletePodEvent, *dmapi.AllocateDevice, *networksapi.NetworksChanged, *dmapi.PrepareClaim, *crossnodeapi.SpanChanged:
		return true
	}
	return event.Spec().Method.IsResync()
}

// networksDeclared tells whether memifs may be in networks: then a memif
// is wired only once its spec is known.
func (h *Handler) networksDeclared() bool {
	applied := h.assigner.Applied()
	return len(applied.Networks) > 0 || applied.DefaultNetwork != ""
}

// Resync implements controllerapi.EventHandler: it applies the networks,
// wires every allocation bound to a pod and forgets every other interface
// it put. ListAllocations reads the device manager's state only, as the
// event loop requires.
func (h *Handler) Resync(_ controllerapi.Event, txn controllerapi.EventOperations) error {
	if h.opts.Span != nil {
		h.setSpan(h.opts.Span.Span())
	}
	if h.opts.Networks != nil {
		cfg := h.opts.Networks.Networks()
		if !h.wiringFollowed {
			h.followWiring(cfg.DefaultNetwork)
		}
		h.applyNetworks(cfg)
	}
	byPod := map[podapi.PodID][]dmapi.MemifInfo{}
	live := map[string]bool{}
	for _, memif := range h.devices.ListAllocations() {
		live[memif.AllocationID] = true
		if memif.Pod.Name != "" {
			byPod[memif.Pod] = append(byPod[memif.Pod], memif)
		}
	}
	h.assigner.Retain(live)
	for id := range h.told {
		if !live[id] {
			h.forgetTold(id)
		}
	}
	wired := make(map[podapi.PodID]wiredPod, len(byPod))
	for pod, memifs := range byPod {
		// A resync wires what pods already had: they were told.
		record := h.render(pod, memifs[0].PodUID, memifs, false)
		putAll(txn, record.values)
		wired[pod] = record.wiredPod
	}
	for pod, old := range h.wired {
		deleteStale(txn, old.keys, wired[pod].keys)
	}
	h.wired = wired
	h.last = nil
	h.putNetworks(txn)
	// The cross-connects depend on the configuration only: every resync
	// puts them all, and the KV scheduler holds each until both of its
	// memifs exist.
	putAll(txn, RenderXConnects(h.config))
	h.metrics.addressUse(h.assigner.AddressUse())
	return h.assigner.Save()
}

// Update implements controllerapi.EventHandler.
func (h *Handler) Update(event controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	h.last = &undo{event: event, before: map[podapi.PodID]*wiredPod{}, assigned: h.assigner.Snapshot()}
	var change string
	var err error
	switch ev := event.(type) {
	case *dmapi.AllocateDevice:
		if len(ev.TakenOver) == 0 {
			return "", nil
		}
		change, err = h.rewireTakenOver(ev.TakenOver, txn)
		if err == nil {
			change = joinChanges(change, h.retryRefused(retriedOnRelease, podapi.PodID{}, txn))
		}
	case podapi.AddPodEvent:
		pod := ev.GetAddPod().Pod
		h.remember(pod.ID)
		change, err = h.wire(pod, txn)
	case podapi.DeletePodEvent:
		pod := ev.GetDeletePod().Pod
		h.remember(pod.ID)
		change = h.unwire(pod, txn)
		change = joinChanges(change, h.retryRefused(retriedOnRelease, pod.ID, txn))
	case *networksapi.NetworksChanged:
		change = h.rewireAll(ev.Config, txn)
	case *crossnodeapi.SpanChanged:
		change = h.respan(h.spanNow(ev.Span), txn)
	case *dmapi.PrepareClaim:
		change, err = h.prepareClaim(ev)
		if err != nil {
			// The loop reverts only the handlers before this one: the
			// claim's records and the addresses its other memifs got go
			// here, or they would stay held after the claim is refused.
			return "", errors.Join(err, h.Revert(event))
		}
	default:
		return "", fmt.Errorf("memif wiring got event %s it does not handle", event.Spec().Name)
	}
	if err == nil {
		h.putNetworks(txn)
		err = h.assigner.Save()
	}
	h.metrics.addressUse(h.assigner.AddressUse())
	return change, err
}

// applyNetworks applies cfg as the assigner allows, and reports the
// changes that wait for pods.
func (h *Handler) applyNetworks(cfg netconf.Config) {
	refusals := h.assigner.SetNetworks(cfg)
	for _, refusal := range refusals {
		h.opts.Log.WarnS("networks.conf change refused", "network", refusal.Network, "change", refusal.Change, "err", refusal)
	}
	h.metrics.changesRefused(refusals)
}

// followWiring moves, once at the agent's start, the memifs of pods that
// name no network to where memifwiring.conf sends them now, before the
// networks are applied: a network they leave is then no longer held by
// them.
func (h *Handler) followWiring(defaultNetwork string) {
	for _, moved := range h.assigner.FollowWiring(defaultNetwork) {
		h.opts.Log.InfoS("memif follows memifwiring.conf", "pod", moved.Pod, "memifID", moved.MemifID,
			"from", networkOrNone(moved.From), "to", networkOrNone(moved.To))
	}
	h.wiringFollowed = true
}

// networkOrNone names a network for a log line.
func networkOrNone(network string) string {
	if network == "" {
		return "none (wired as memifwiring.conf says)"
	}
	return network
}

// rewireAll applies new networks and wires every wired pod again, and
// every pod with a memif refused: a network declared that a refused spec
// named, a subnet grown, a mode now carried wire it.
func (h *Handler) rewireAll(cfg netconf.Config, txn controllerapi.EventOperations) string {
	h.applyNetworks(cfg)
	uids := h.refusedPods(nil, podapi.PodID{})
	for pod, wired := range h.wired {
		uids[pod] = wired.uid
	}
	return h.rewire(uids, txn)
}

// retriedOnRelease are the refusals that an address going back to its
// pool may clear.
var retriedOnRelease = []string{string(memifspec.ReasonSubnetExhausted), string(memifspec.ReasonAddressTaken)}

// retryRefused wires again, in the order of their names, the pods bound
// now (but except, which is going) with a memif last refused for one of
// reasons: an address released by the event is handed to them, as the
// next resync would.
func (h *Handler) retryRefused(reasons []string, except podapi.PodID, txn controllerapi.EventOperations) string {
	uids := h.refusedPods(reasons, except)
	if len(uids) == 0 {
		return ""
	}
	return h.rewire(uids, txn)
}

// refusedPods returns each pod bound now (but except) with a memif last
// refused for one of reasons (nil: any), with the UID its memifs are bound
// to. It reads the device manager only when a refusal is on record.
func (h *Handler) refusedPods(reasons []string, except podapi.PodID) map[podapi.PodID]string {
	refused := func(n dmapi.MemifNetwork) bool {
		return n.Refused != "" && (reasons == nil || slices.Contains(reasons, n.Reason))
	}
	pods := map[podapi.PodID]string{}
	anyRefused := false
	for _, told := range h.told {
		if anyRefused = slices.ContainsFunc(told.networks, refused); anyRefused {
			break
		}
	}
	if !anyRefused {
		return pods
	}
	for _, memif := range h.devices.ListAllocations() {
		if memif.Pod.Name == "" || memif.Pod == except {
			continue
		}
		if slices.ContainsFunc(h.told[memif.AllocationID].networks, refused) {
			pods[memif.Pod] = memif.PodUID
		}
	}
	return pods
}

// joinChanges joins the descriptions of an event's changes.
func joinChanges(first, second string) string {
	if first == "" || second == "" {
		return first + second
	}
	return first + "; " + second
}

// setSpan makes the l3 networks hand out the node's shares when span
// is enabled; the networks' values follow at the next putNetworks.
func (h *Handler) setSpan(span crossnodeapi.Span) {
	h.span = span
	h.assigner.SetShares(span.Enabled(), span.Shares)
}

// spanNow is the span a SpanChanged carrying span renders: the source's
// as it is now, which is never older than span, else span. A SpanChanged
// queued before the startup resync carries a span that the resync, which
// reads the source, may already have gone past: rendered, it would take
// VPP back until the next one.
func (h *Handler) spanNow(span crossnodeapi.Span) crossnodeapi.Span {
	if h.opts.Span != nil {
		return h.opts.Span.Span()
	}
	return span
}

// respan applies a new span: the address pools follow the node's shares,
// and every pod with memifs bound is wired again, those whose memifs
// waited for a share too (a pod not wired has no UID here: its specs are
// recorded only from its runtime's AddPod).
func (h *Handler) respan(span crossnodeapi.Span, txn controllerapi.EventOperations) string {
	h.setSpan(span)
	cfg := h.assigner.Applied()
	if h.opts.Networks != nil {
		cfg = h.opts.Networks.Networks()
	}
	h.applyNetworks(cfg)
	uids := map[podapi.PodID]string{}
	for _, memif := range h.devices.ListAllocations() {
		if memif.Pod.Name != "" {
			uids[memif.Pod] = ""
		}
	}
	for pod, wired := range h.wired {
		uids[pod] = wired.uid
	}
	change := h.rewire(uids, txn)
	if change == "" {
		return "span: " + span.String()
	}
	return "span: " + span.String() + "; " + change
}

// rewire wires pods again, each given with the UID it was wired for.
func (h *Handler) rewire(uids map[podapi.PodID]string, txn controllerapi.EventOperations) string {
	var changes []string
	for _, pod := range slices.SortedFunc(maps.Keys(uids), func(a, b podapi.PodID) int { return strings.Compare(a.String(), b.String()) }) {
		h.remember(pod)
		change, err := h.wire(podapi.Pod{ID: pod, UID: uids[pod]}, txn)
		if err != nil {
			h.opts.Log.ErrorS(err, "wiring a pod under the new networks failed", "pod", pod)
			continue
		}
		if change != "" {
			changes = append(changes, fmt.Sprintf("%s: %s", pod, change))
		}
	}
	return strings.Join(changes, "; ")
}

// putNetworks puts the networks' own values (VRF tables, gateway
// loopbacks, bridge domains) for the memifs wired, and deletes those no
// longer needed; memifwiring.conf's bridge domain, when no network took
// it over, holds every memif in no network.
func (h *Handler) putNetworks(txn controllerapi.Transaction) {
	members := map[string][]string{}
	gateways := map[string]netip.Prefix{}
	for _, pod := range h.wired {
		for network, names := range pod.members {
			members[network] = append(members[network], names...)
		}
		maps.Copy(gateways, pod.gateways)
	}
	values := RenderNetworks(h.assigner.Applied(), gateways, members)
	RenderSpan(h.assigner.Applied(), h.span, values)
	if _, taken := h.assigner.Applied().Network(h.config.BridgeDomain); h.config.BridgeDomain != "" && !taken {
		var keys []string
		for _, pod := range h.wired {
			keys = append(keys, pod.members[""]...)
		}
		for i, name := range keys {
			keys[i] = vpp_interfaces.InterfaceKey(name)
		}
		values[vpp_l2.BridgeDomainKey(h.config.BridgeDomain)] = RenderBridgeDomain(h.config.BridgeDomain, keys)
	}
	keys := slices.Sorted(maps.Keys(values))
	deleteStale(txn, h.networkKeys, keys)
	putAll(txn, values)
	h.networkKeys = keys
}

// rewireTakenOver wires again the pods that held memifs the device manager
// just released for kubelet's new Allocate: their interfaces on those
// memifs are deleted before the directories are removed.
func (h *Handler) rewireTakenOver(takenOver []dmapi.MemifInfo, txn controllerapi.EventOperations) (string, error) {
	var changes []string
	for _, memif := range takenOver {
		h.assigner.Release(memif.AllocationID)
		h.forgetTold(memif.AllocationID)
	}
	for _, memif := range takenOver {
		if memif.Pod.Name == "" {
			continue
		}
		if _, done := h.last.before[memif.Pod]; done {
			continue
		}
		h.remember(memif.Pod)
		change, err := h.wire(podapi.Pod{ID: memif.Pod, UID: memif.PodUID}, txn)
		if err != nil {
			return "", err
		}
		changes = append(changes, fmt.Sprintf("%s: %s", memif.Pod, change))
	}
	return strings.Join(changes, "; "), nil
}

// Revert implements controllerapi.EventHandler: it restores the record of the
// pod the reverted Update changed, and the specs and addresses. The
// transaction itself is discarded by the controller.
func (h *Handler) Revert(event controllerapi.Event) error {
	if h.last == nil || h.last.event != event {
		return nil
	}
	for pod, before := range h.last.before {
		if before != nil {
			h.wired[pod] = *before
		} else {
			delete(h.wired, pod)
		}
	}
	err := h.assigner.Rollback(h.last.assigned)
	h.metrics.addressUse(h.assigner.AddressUse())
	h.last = nil
	if err != nil {
		return err
	}
	return h.assigner.Save()
}

// remember records pod's record before the current Update changes it.
func (h *Handler) remember(pod podapi.PodID) {
	if _, done := h.last.before[pod]; done {
		return
	}
	if before, existed := h.wired[pod]; existed {
		h.last.before[pod] = &before
	} else {
		h.last.before[pod] = nil
	}
}

// rendered is one pod's values and its record.
type rendered struct {
	values map[string]proto.Message
	wiredPod
}

// render renders pod's memifs and tells what they got; announce: the pod
// too, of what changed.
func (h *Handler) render(pod podapi.PodID, uid string, memifs []dmapi.MemifInfo, announce bool) rendered {
	assignments := map[string][]assign.Assignment{}
	known := memifs[:0:0]
	for _, memif := range memifs {
		// A memif whose spec is not known yet waits: wired now, it would
		// be in the wrong network until its pod's annotation arrives.
		if !h.assigner.Recorded(memif.AllocationID) && h.networksDeclared() {
			continue
		}
		known = append(known, memif)
		assignments[memif.AllocationID] = h.assigner.Resolve(memif.AllocationID)
	}
	memifs = known
	r := Render(pod, memifs, assignments, h.config)
	owners := ownerNames(memifs)
	for i, memif := range memifs {
		var announced *announcement
		if announce {
			announced = &announcement{pod: podapi.Pod{ID: pod, UID: uid}, owner: owners[i]}
		}
		h.tell(pod, memif, r.Networks[memif.AllocationID], announced)
	}
	record := rendered{values: r.Values, wiredPod: wiredPod{uid: uid, keys: slices.Sorted(maps.Keys(r.Values)),
		members: r.Members, gateways: r.Gateways}}
	for _, memif := range memifs {
		record.allocations = append(record.allocations, memif.AllocationID)
	}
	return record
}

func (h *Handler) wire(pod podapi.Pod, txn controllerapi.EventOperations) (string, error) {
	memifs, err := h.podMemifs(pod)
	if err != nil {
		return "", err
	}
	// A pod with a UID is the runtime's (kubelet alone gives none): its
	// sandbox's annotations came with it.
	if pod.UID != "" {
		for _, memif := range memifs {
			if !h.assigner.Recorded(memif.AllocationID) {
				h.assigner.Record(memif.AllocationID, pod.ID.String(), memif.ContainerName, len(memif.DeviceIDs), pod.Networks)
			}
		}
	}
	record := h.render(pod.ID, pod.UID, memifs, true)
	deleteStale(txn, h.wired[pod.ID].keys, record.keys)
	putAll(txn, record.values)
	if len(record.keys) == 0 {
		delete(h.wired, pod.ID)
		return "", nil
	}
	h.wired[pod.ID] = record.wiredPod
	return "put " + interfaceNames(record.keys), nil
}

// unwire deletes what was put for pod, unless it was put for another
// incarnation of the same name (a late DeletePod of a replaced pod), and
// returns its memifs' addresses.
func (h *Handler) unwire(pod podapi.Pod, txn controllerapi.EventOperations) string {
	wired, ok := h.wired[pod.ID]
	if !ok || (pod.UID != "" && wired.uid != "" && pod.UID != wired.uid) {
		return ""
	}
	for _, key := range wired.keys {
		txn.Delete(key)
	}
	for _, id := range wired.allocations {
		h.assigner.Release(id)
		h.forgetTold(id)
	}
	delete(h.wired, pod.ID)
	return "deleted " + interfaceNames(wired.keys)
}

// prepareClaim records the specs of a prepared claim's memifs and checks
// them against the networks: a refused one fails the event, which kubelet
// shows in the pod's events, and the claim is not prepared. What each
// memif gets is filled into the prepared requests, for the CDI spec.
func (h *Handler) prepareClaim(ev *dmapi.PrepareClaim) (string, error) {
	specs := map[string]int{}
	for i, r := range ev.Requests {
		specs[r.Name] = i
	}
	var problems []error
	for i, prepared := range ev.Prepared {
		memif := prepared.Memif
		if !h.assigner.Recorded(memif.AllocationID) {
			request := ev.Requests[specs[prepared.Request]]
			h.assigner.RecordClaim(memif.AllocationID, ev.Pod.ID.String(), len(memif.DeviceIDs), request.Spec)
		}
		var networks []dmapi.MemifNetwork
		for _, assignment := range h.assigner.Resolve(memif.AllocationID) {
			if assignment.Refused != nil {
				h.metrics.memifRefused(string(assignment.Refused.Reason))
				problems = append(problems, fmt.Errorf("request %q, memif %d: %w", prepared.Request, assignment.MemifID, assignment.Refused))
			}
			networks = append(networks, memifNetwork(assignment))
		}
		ev.Prepared[i].Memif.Networks = networks
	}
	if err := errors.Join(problems...); err != nil {
		return "", fmt.Errorf("claim %s/%s: %w", ev.Namespace, ev.Name, err)
	}
	return "", nil
}

// tell records what memif's memifs got with the device manager, writes
// their memif.json, and counts and logs each memif newly refused; with
// an announcement, the pod is told of each memif newly refused or wired.
func (h *Handler) tell(pod podapi.PodID, memif dmapi.MemifInfo, networks []dmapi.MemifNetwork, announced *announcement) {
	told := h.told[memif.AllocationID]
	if slices.EqualFunc(told.networks, networks, equalNetworks) && told.memifJSON != nil {
		return
	}
	for _, n := range networks {
		if slices.ContainsFunc(told.networks, func(o dmapi.MemifNetwork) bool { return equalNetworks(o, n) }) {
			continue
		}
		if n.Refused != "" {
			h.metrics.memifRefused(n.Reason)
			h.opts.Log.WarnS("memif not wired", "pod", pod, "memifID", n.MemifID, "allocation", memif.AllocationID, "reason", n.Refused)
		}
		h.announce(announced, memif, n)
	}
	told.networks = networks
	if h.opts.Recorder != nil {
		h.opts.Recorder.SetMemifNetworks(memif.AllocationID, networks)
		content, err := renderMemifJSON(memif, networks)
		if err == nil && !slices.Equal(content, told.memifJSON) {
			err = h.opts.Recorder.WriteMemifJSON(memif.AllocationID, content)
		}
		if err != nil {
			h.opts.Log.ErrorS(err, "memif networks not recorded: written again at the next change or resync", "pod", pod, "allocation", memif.AllocationID)
			content = nil
		}
		told.memifJSON = content
	} else {
		told.memifJSON = []byte{}
	}
	h.told[memif.AllocationID] = told
}

// forgetTold forgets what an allocation gone was told.
func (h *Handler) forgetTold(allocationID string) {
	if _, ok := h.told[allocationID]; ok && h.opts.Recorder != nil {
		h.opts.Recorder.SetMemifNetworks(allocationID, nil)
	}
	delete(h.told, allocationID)
}

// podMemifs returns the pod's memifs bound to this incarnation of it; a pod
// without a memif has nothing to wire. It reads the bound state only: the
// handler runs on the event loop, which must not wait on the runtime or
// kubelet, and an unbound allocation would be unwired by the next resync.
func (h *Handler) podMemifs(pod podapi.Pod) ([]dmapi.MemifInfo, error) {
	memifs, err := h.devices.BoundPodMemifs(pod.ID)
	if errors.Is(err, dmapi.ErrNoMemif) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get memifs of pod %s: %w", pod, err)
	}
	return slices.DeleteFunc(memifs, func(memif dmapi.MemifInfo) bool {
		return pod.UID != "" && memif.PodUID != "" && memif.PodUID != pod.UID
	}), nil
}

func putAll(txn controllerapi.Transaction, values map[string]proto.Message) {
	for key, value := range values {
		txn.Put(key, value)
	}
}

// deleteStale deletes the keys of old that are not in current (sorted).
func deleteStale(txn controllerapi.Transaction, old, current []string) {
	for _, key := range old {
		if _, found := slices.BinarySearch(current, key); !found {
			txn.Delete(key)
		}
	}
}

func interfaceNames(keys []string) string {
	names := make([]string, len(keys))
	for i, key := range keys {
		names[i] = vpp_interfaces.ModelInterface.StripKeyPrefix(key)
	}
	return strings.Join(names, ", ")
}

// renderMemifJSON returns memif.json of the memifs of memif that are
// wired.
func renderMemifJSON(memif dmapi.MemifInfo, networks []dmapi.MemifNetwork) ([]byte, error) {
	interfaces := []memifjson.Interface{}
	for _, n := range networks {
		if n.Refused == "" {
			interfaces = append(interfaces, MemifJSONInterface(memif, n))
		}
	}
	return memifjson.Render(interfaces)
}

// MemifJSONInterface is memif.json's entry of memif n of the allocation
// memif, as the pod reads it once n is wired.
func MemifJSONInterface(memif dmapi.MemifInfo, n dmapi.MemifNetwork) memifjson.Interface {
	iface := memifjson.Interface{MemifID: n.MemifID, Socket: memif.ContainerSocket, Network: n.Network, Mode: n.Mode,
		MAC: n.MAC, Queues: n.Queues, RingSize: n.RingSize, BufferSize: n.BufferSize, MTU: n.MTU}
	for _, ip := range n.IPs {
		if prefix, err := netip.ParsePrefix(ip); err == nil {
			iface.IPs = append(iface.IPs, prefix)
		}
	}
	for _, gateway := range n.Gateway {
		if addr, err := netip.ParseAddr(gateway); err == nil {
			iface.Gateway = append(iface.Gateway, addr)
		}
	}
	return iface
}

func equalNetworks(a, b dmapi.MemifNetwork) bool {
	return a.MemifID == b.MemifID && a.Network == b.Network && a.Mode == b.Mode && slices.Equal(a.IPs, b.IPs) &&
		slices.Equal(a.Gateway, b.Gateway) && a.MAC == b.MAC && a.Queues == b.Queues && a.RingSize == b.RingSize &&
		a.BufferSize == b.BufferSize && a.MTU == b.MTU && a.RxMode == b.RxMode && a.Refused == b.Refused && a.Reason == b.Reason
}
