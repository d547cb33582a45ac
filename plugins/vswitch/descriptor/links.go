package descriptor

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// Link is the link of a memif of the agent's as VPP sees it.
type Link struct {
	// Name is the model's name (the interface's tag after owner.Prefix).
	Name string
	// VPPName is VPP's own name, e.g. memif1/0.
	VPPName string
	// Index is VPP's interface index.
	Index vppmsg.InterfaceIndex
	// Socket is the memif's socket filename.
	Socket string
	// Up is true while a peer is connected with the right ID and secret.
	Up bool
	// DownReason is why VPP dropped the last peer ("incorrect secret"),
	// from show memif; empty while up or when no peer ever came.
	DownReason string
}

// ReadLinks returns the link of every memif of the agent's, by name.
func ReadLinks(ctx context.Context, conn *vppapi.Conn) (map[string]Link, error) {
	state, err := readState(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("read memif links: %w", err)
	}
	links := map[string]Link{}
	for index, memif := range state.memifs {
		details := state.interfaces[index]
		if details == nil {
			continue
		}
		name, ours := owner.Name(details.Tag)
		if !ours {
			continue
		}
		link := Link{Name: name, VPPName: details.InterfaceName, Index: index, Socket: state.sockets[memif.SocketID],
			Up: memif.Flags&vppmsg.IfStatusAPIFlagLinkUp != 0}
		if !link.Up {
			if link.DownReason, err = downReason(ctx, conn, link.VPPName); err != nil {
				return nil, err
			}
		}
		links[name] = link
	}
	return links, nil
}

// downReason reads why VPP disconnected a memif's peer. The binary API
// does not carry it; show memif does, as local-disc-reason (VPP refused
// the peer) or remote-disc-reason (the peer left, saying why).
func downReason(ctx context.Context, conn *vppapi.Conn, vppName string) (string, error) {
	var reply vppmsg.CliInbandReply
	if err := conn.Request(ctx, &vppmsg.CliInband{Cmd: "show memif " + vppName}, &reply); err != nil {
		return "", fmt.Errorf("read why memif %s is down: %w", vppName, err)
	}
	return parseDownReason(reply.Reply), nil
}

// discReason matches show memif's disconnect reasons. VPP prints the
// reason from a vector that is not NUL-terminated, so it may end with a
// stray byte; only printable text up to it is kept.
var discReason = regexp.MustCompile(`(local|remote)-disc-reason "([[:print:]]*?)[^[:alnum:] ]?"`)

func parseDownReason(show string) string {
	match := discReason.FindStringSubmatch(show)
	if match == nil {
		return ""
	}
	if match[1] == "remote" {
		return "the pod side said: " + match[2]
	}
	return match[2]
}

// EnsureRxModes applies a model's rx modes to a connected memif whose
// queues VPP holds in other modes, and reports whether it wrote any. VPP
// makes a memif master's queues when its peer connects, each in VPP's
// default mode, so the modes are applied again after every connection; a
// link that was up before the agent started keeps its modes, and an agent
// restart changes nothing.
func EnsureRxModes(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, modes []*vpp_interfaces.Interface_RxMode) (bool, error) {
	if len(modes) == 0 {
		return false, nil
	}
	queues, err := vppapi.Dump[vppmsg.SwInterfaceRxPlacementDetails](ctx, conn, &vppmsg.SwInterfaceRxPlacementDump{SwIfIndex: index})
	if err != nil {
		return false, fmt.Errorf("dump VPP rx placement: %w", err)
	}
	if !slices.ContainsFunc(queues, func(queue *vppmsg.SwInterfaceRxPlacementDetails) bool {
		wanted := rxModeOf(modes, queue.QueueID)
		return wanted != vpp_interfaces.Interface_RxMode_DEFAULT && wanted != vpp_interfaces.Interface_RxMode_Type(queue.Mode)
	}) {
		return false, nil
	}
	return true, SetRxModes(ctx, conn, index, modes)
}

// SetRxModes applies a model's rx modes to a connected memif's queues: a
// default mode to all of them (queue_id_valid false), then each queue's
// own.
func SetRxModes(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, modes []*vpp_interfaces.Interface_RxMode) error {
	for _, mode := range modes {
		req := &vppmsg.SwInterfaceSetRxMode{SwIfIndex: index, Mode: vppmsg.RxMode(mode.Mode)}
		if !mode.DefaultMode {
			req.QueueIDValid, req.QueueID = true, mode.Queue
		}
		if err := request(ctx, conn, req, &vppmsg.SwInterfaceSetRxModeReply{}); err != nil {
			return fmt.Errorf("set rx mode %s: %w", mode.Mode, err)
		}
	}
	return nil
}
