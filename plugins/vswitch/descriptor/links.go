package descriptor

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

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

// ReadLinks returns the link of every memif of the agent's, by name, with
// the reason of each link down read in one show memif.
func ReadLinks(ctx context.Context, conn *vppapi.Conn) (map[string]Link, error) {
	state, err := readState(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("read memif links: %w", err)
	}
	links := state.links()
	if err := ReadDownReasons(ctx, conn, links); err != nil {
		return nil, err
	}
	return links, nil
}

// links are the links of the agent's memifs in s, by name, without
// reasons.
func (s *vppState) links() map[string]Link {
	links := map[string]Link{}
	for index, memif := range s.memifs {
		details := s.interfaces[index]
		if details == nil {
			continue
		}
		if name, ours := owner.Name(details.Tag); ours {
			links[name] = Link{Name: name, VPPName: details.InterfaceName, Index: index, Socket: s.sockets[memif.SocketID],
				Up: memif.Flags&vppmsg.IfStatusAPIFlagLinkUp != 0}
		}
	}
	return links
}

// memifDevType is how sw_interface_details names a memif's device.
const memifDevType = "memif"

// ReadLink returns the link of the memif of the agent's at index, without
// its reason (ReadDownReasons); false when index is no such memif
// (anymore). Its socket is the one names holds for it.
func ReadLink(ctx context.Context, conn *vppapi.Conn, index vppmsg.InterfaceIndex, names InterfaceIndex) (Link, bool, error) {
	found, err := vppapi.Dump[vppmsg.SwInterfaceDetails](ctx, conn, &vppmsg.SwInterfaceDump{SwIfIndex: index})
	if err != nil {
		return Link{}, false, fmt.Errorf("read the link of VPP interface %d: %w", index, err)
	}
	if len(found) != 1 || found[0].InterfaceDevType != memifDevType {
		return Link{}, false, nil
	}
	name, ours := owner.Name(found[0].Tag)
	if !ours {
		return Link{}, false, nil
	}
	var socket string
	if meta, known := names.Lookup(name); known {
		socket = meta.socket
	}
	return Link{Name: name, VPPName: found[0].InterfaceName, Index: index, Socket: socket,
		Up: found[0].Flags&vppmsg.IfStatusAPIFlagLinkUp != 0}, true, nil
}

// ReadDownReasons reads why VPP disconnected the pod side of each link
// down in links, in one show memif, and sets its DownReason. The binary
// API does not carry it, nor does any event: VPP refuses a pod side (a
// wrong secret) before its link changes. show memif has it, as
// local-disc-reason (VPP refused the peer) or remote-disc-reason (the
// peer left, saying why).
func ReadDownReasons(ctx context.Context, conn *vppapi.Conn, links map[string]Link) error {
	var down []string
	for _, link := range links {
		if !link.Up {
			down = append(down, link.VPPName)
		}
	}
	if len(down) == 0 {
		return nil
	}
	slices.Sort(down)
	var reply vppmsg.CliInbandReply
	if err := conn.Request(ctx, &vppmsg.CliInband{Cmd: "show memif " + strings.Join(down, " ")}, &reply); err != nil {
		return fmt.Errorf("read why memifs %s are down: %w", strings.Join(down, " "), err)
	}
	reasons := parseDownReasons(reply.Reply)
	for name, link := range links {
		if !link.Up {
			link.DownReason = reasons[link.VPPName]
			links[name] = link
		}
	}
	return nil
}

// discReason matches show memif's disconnect reasons. VPP prints a
// reason with %s from a vector that has no NUL after it, so whatever
// follows the vector in memory up to a NUL is printed after it: any
// number of bytes, letters among them ("incorrect secretC" was seen).
var discReason = regexp.MustCompile(`(local|remote)-disc-reason "(.*)"`)

// vppRefusals are the reasons VPP's memif plugin gives when it refuses or
// drops a pod side (src/plugins/memif/socket.c, clib_error_return). A
// local reason that starts with one of them is that one, whatever was
// printed after it.
var vppRefusals = []string{
	"incompatible protocol version", "unsupported version", "unmatched interface id",
	"cannot connect to slave", "already connected", "mode mismatch", "secret required",
	"incorrect secret", "missing memory region fd", "unexpected region index", "too many regions",
	"missing ring interrupt fd", "private headers not supported", "unexpected ring index",
	"too many rings", "disconnect received", "unexpected message received", "unknown message type",
	"connection fd error",
}

// cleanReason is the reason show memif printed as text: the VPP reason it
// starts with, else its printable text up to the first other byte,
// without a stray non-alphanumeric byte at its end (the pod side's own
// reasons are free text).
func cleanReason(printed string) string {
	var longest string
	for _, refusal := range vppRefusals {
		if strings.HasPrefix(printed, refusal) && len(refusal) > len(longest) {
			longest = refusal
		}
	}
	if longest != "" {
		return longest
	}
	if end := strings.IndexFunc(printed, func(r rune) bool { return !unicode.IsPrint(r) }); end >= 0 {
		printed = printed[:end]
	}
	if last, size := utf8.DecodeLastRuneInString(printed); size > 0 && !unicode.IsLetter(last) && !unicode.IsDigit(last) && last != ' ' {
		printed = printed[:len(printed)-size]
	}
	return printed
}

// parseDownReasons reads each interface's disconnect reason from show
// memif, whose section of an interface starts with "interface <name>".
func parseDownReasons(show string) map[string]string {
	reasons := map[string]string{}
	var current string
	for line := range strings.Lines(show) {
		if name, ok := strings.CutPrefix(line, "interface "); ok {
			current = strings.TrimSpace(name)
			continue
		}
		match := discReason.FindStringSubmatch(line)
		if _, seen := reasons[current]; match == nil || current == "" || seen {
			continue
		}
		reason := cleanReason(match[2])
		reasons[current] = reason
		if match[1] == "remote" {
			reasons[current] = "the pod side said: " + reason
		}
	}
	return reasons
}
