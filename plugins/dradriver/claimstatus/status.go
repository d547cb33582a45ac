package claimstatus

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// The conditions of each device.
const (
	// ConditionReady: the memif is wired as its spec asks.
	ConditionReady = "Ready"
	// ConditionLinkUp: VPP shows the memif's pod side connected.
	ConditionLinkUp = "LinkUp"
)

// The reasons of the conditions. A refused memif's Ready reason is its
// refusal's (memifspec.Reason) in CamelCase, such as UnknownNetwork.
const (
	ReasonWired               = "Wired"
	ReasonLinkUp              = "LinkUp"
	ReasonPodSideNotConnected = "PodSideNotConnected"
	ReasonWrongSecret         = "WrongSecret"
	ReasonVswitchUnreachable  = "VswitchUnreachable"
)

// Node is what the agent knows of its memifs at one moment, all of it
// read from memory: the device manager's allocations (with what the
// memif wiring resolved for each memif), VPP's links as the vswitch
// plugin last read them, and whether VPP answers.
type Node struct {
	Allocations []dmapi.MemifInfo
	Links       []vswitchapi.MemifLink
	Vswitch     vswitchapi.Reachability
	// Grace is vswitch.conf's link-down-grace: how long a link that was
	// up may be down before LinkUp turns False.
	Grace time.Duration
	Now   time.Time
}

// Claim is the status of one prepared claim's devices.
type Claim struct {
	Ref dmapi.ClaimRef
	// Devices are sorted by device name.
	Devices []Device
}

// Device is the status of one device (one memif) of a claim.
type Device struct {
	Device string
	// Entry is the memif's memif.json entry; nil while it is refused.
	Entry  *memifjson.Interface
	Ready  Condition
	LinkUp Condition
	// linkDownSince is when a Build first found the link down, this
	// time; zero while up.
	linkDownSince time.Time
}

// Condition is one condition of a device; Since is when its status last
// changed.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	Since   time.Time
}

// Build returns the status of each claim the node prepared whose memifs
// the wiring has all resolved, by claim UID; a claim with a memif not
// resolved yet (just prepared, or the agent just started) is left out,
// so that what was written of it stays until it is known. previous is
// what the last Build returned: a link that was up stays LinkUp True
// until it has been down for node.Grace (a wrong secret at once), and a
// condition keeps its Since while its status stays.
func Build(node Node, previous map[string]Claim) map[string]Claim {
	links := linksByMemif(node)
	built := map[string]Claim{}
	unresolved := map[string]bool{}
	for _, memif := range node.Allocations {
		uid := memif.Claim.UID
		if uid == "" || unresolved[uid] {
			continue
		}
		claim := built[uid]
		claim.Ref = memif.Claim
		for memifID, deviceID := range memif.DeviceIDs {
			n, ok := network(memif, uint32(memifID))
			if !ok {
				unresolved[uid] = true
				break
			}
			link, hasLink := links[memifKey{memif.AllocationID, memifID}]
			was, _ := previousDevice(previous[uid], deviceID)
			claim.Devices = append(claim.Devices, device(node, memif, n, link, hasLink, was, deviceID))
		}
		built[uid] = claim
	}
	for uid := range unresolved {
		delete(built, uid)
	}
	for uid, claim := range built {
		slices.SortFunc(claim.Devices, func(a, b Device) int { return cmp.Compare(a.Device, b.Device) })
		built[uid] = claim
	}
	return built
}

type memifKey struct {
	allocationID string
	memifID      int
}

// linksByMemif finds the link of each memif of the allocations.
func linksByMemif(node Node) map[memifKey]vswitchapi.MemifLink {
	owners := wiring.MemifInterfaces(node.Allocations)
	links := map[memifKey]vswitchapi.MemifLink{}
	for _, link := range node.Links {
		if owner, ok := owners[link.Name]; ok {
			links[memifKey{owner.AllocationID, owner.MemifID}] = link
		}
	}
	return links
}

func network(memif dmapi.MemifInfo, memifID uint32) (dmapi.MemifNetwork, bool) {
	for _, n := range memif.Networks {
		if n.MemifID == memifID {
			return n, true
		}
	}
	return dmapi.MemifNetwork{}, false
}

func previousDevice(claim Claim, deviceID string) (Device, bool) {
	for _, d := range claim.Devices {
		if d.Device == deviceID {
			return d, true
		}
	}
	return Device{}, false
}

func device(node Node, memif dmapi.MemifInfo, n dmapi.MemifNetwork, link vswitchapi.MemifLink, hasLink bool, was Device, deviceID string) Device {
	d := Device{Device: deviceID}
	if n.Refused != "" {
		d.Ready = Condition{Status: metav1.ConditionFalse, Reason: camelCase(n.Reason), Message: n.Refused}
	} else {
		entry := wiring.MemifJSONInterface(memif, n)
		d.Entry = &entry
		d.Ready = Condition{Status: metav1.ConditionTrue, Reason: ReasonWired, Message: wiredMessage(n)}
	}
	d.linkDownSince = was.linkDownSince
	if hasLink && link.Up {
		d.linkDownSince = time.Time{}
	} else if d.linkDownSince.IsZero() {
		d.linkDownSince = node.Now
	}
	d.LinkUp = linkUp(node, link, hasLink, was.LinkUp, d.linkDownSince)
	d.Ready.Since = since(was.Ready, d.Ready, node.Now)
	d.LinkUp.Since = since(was.LinkUp, d.LinkUp, node.Now)
	return d
}

func wiredMessage(n dmapi.MemifNetwork) string {
	if n.Network == "" {
		return "wired in VPP, in no network"
	}
	return "wired in VPP in network " + n.Network
}

// linkUp is the LinkUp condition of a memif whose link VPP shows as link
// (hasLink false: VPP shows none); was is the condition last built, and
// seenDown when a Build first found the link down.
func linkUp(node Node, link vswitchapi.MemifLink, hasLink bool, was Condition, seenDown time.Time) Condition {
	if hasLink && link.Up {
		return Condition{Status: metav1.ConditionTrue, Reason: ReasonLinkUp, Message: "the pod side is connected to " + link.VPPName}
	}
	down := Condition{Status: metav1.ConditionFalse, Reason: ReasonPodSideNotConnected, Message: "no pod side is connected"}
	downSince := seenDown
	switch {
	case node.Vswitch.Configured && !node.Vswitch.Reachable:
		down.Reason, down.Message, downSince = ReasonVswitchUnreachable, "VPP does not answer", node.Vswitch.Since
		if node.Vswitch.Err != nil {
			down.Message += ": " + node.Vswitch.Err.Error()
		}
	case !hasLink:
		down.Message = "VPP shows no interface for the memif"
	case link.DownReason == vswitchapi.WrongSecret:
		return Condition{Status: metav1.ConditionFalse, Reason: ReasonWrongSecret, Message: "VPP refused the pod side: it presented another secret than the memif's"}
	default:
		if !link.DownSince.IsZero() {
			downSince = link.DownSince
		}
		if link.DownReason != "" {
			down.Message = "the pod side left: " + link.DownReason
		}
	}
	if was.Status == metav1.ConditionTrue && node.Now.Sub(downSince) < node.Grace {
		return was
	}
	return down
}

// since keeps a condition's Since while its status stays.
func since(was, now Condition, at time.Time) time.Time {
	if was.Status == now.Status && !was.Since.IsZero() {
		return was.Since
	}
	return at
}

// camelCase turns a refusal's reason (unknown-network) into a condition
// reason (UnknownNetwork).
func camelCase(reason string) string {
	var b strings.Builder
	for word := range strings.SplitSeq(reason, "-") {
		if word != "" {
			b.WriteString(strings.ToUpper(word[:1]) + word[1:])
		}
	}
	if b.Len() == 0 {
		return "Refused"
	}
	return b.String()
}

// Equal tells whether a and b would be written the same, Since aside.
func (a Claim) Equal(b Claim) bool {
	return a.Ref == b.Ref && slices.EqualFunc(a.Devices, b.Devices, func(x, y Device) bool {
		return x.Device == y.Device && x.Ready.same(y.Ready) && x.LinkUp.same(y.LinkUp) && sameEntry(x.Entry, y.Entry)
	})
}

func (c Condition) same(o Condition) bool {
	return c.Status == o.Status && c.Reason == o.Reason && c.Message == o.Message
}

func sameEntry(a, b *memifjson.Interface) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}
