package descriptor

import (
	"context"
	"fmt"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

func memifRole(link *vpp_interfaces.MemifLink) vppmsg.MemifRole {
	if link.Master {
		return vppmsg.MemifRoleAPIMaster
	}
	return vppmsg.MemifRoleAPISlave
}

func memifMode(link *vpp_interfaces.MemifLink) vppmsg.MemifMode {
	switch link.Mode {
	case vpp_interfaces.MemifLink_IP:
		return vppmsg.MemifModeAPIIP
	case vpp_interfaces.MemifLink_PUNT_INJECT:
		return vppmsg.MemifModeAPIPuntInject
	}
	return vppmsg.MemifModeAPIEthernet
}

// createMemif makes the memif, on the socket filename the other memifs
// of the scheduler already use, or on a new one; on an error it removes
// the socket filename it added.
func (d *Interfaces) createMemif(ctx context.Context, conn *vppapi.Conn, iface *vpp_interfaces.Interface) (*InterfaceMetadata, error) {
	link := iface.GetMemif()
	req := &vppmsg.MemifCreateV2{Role: memifRole(link), Mode: memifMode(link), ID: link.Id, Secret: link.Secret,
		RxQueues: uint8(link.RxQueues), TxQueues: uint8(link.TxQueues), RingSize: link.RingSize, BufferSize: uint16(link.BufferSize)}
	if iface.PhysAddress != "" {
		req.HwAddr, _ = parseMAC(iface.PhysAddress)
	}
	var socketKnown bool
	req.SocketID, socketKnown = d.socketID(conn, link.SocketFilename)
	if !socketKnown {
		id, err := addSocketFilename(ctx, conn, link.SocketFilename)
		if err != nil {
			return nil, err
		}
		req.SocketID = id
	}
	var created vppmsg.MemifCreateV2Reply
	if err := request(ctx, conn, req, &created); err != nil {
		if !socketKnown {
			removeSocketFilename(ctx, conn, link.SocketFilename)
		}
		return nil, fmt.Errorf("on %s: %w", link.SocketFilename, err)
	}
	return &InterfaceMetadata{Index: created.SwIfIndex, SocketID: req.SocketID, socket: link.SocketFilename, connection: conn.Generation()}, nil
}

// socketID returns the ID VPP gave filename, when a memif the scheduler
// holds uses it.
func (d *Interfaces) socketID(conn *vppapi.Conn, filename string) (uint32, bool) {
	for _, user := range d.Index().socketUsers(filename) {
		if meta, err := d.Index().lookup(conn, user); err == nil {
			return meta.SocketID, true
		}
	}
	return 0, false
}

// addSocketFilename returns the ID of filename in VPP's memif socket
// table, adding it unless VPP holds it already: an add that timed out may
// have been done by VPP after the agent gave up, and a second entry of
// one filename would outlive its memifs.
func addSocketFilename(ctx context.Context, conn *vppapi.Conn, filename string) (uint32, error) {
	sockets, err := vppapi.Dump[vppmsg.MemifSocketFilenameDetails](ctx, conn, &vppmsg.MemifSocketFilenameDump{})
	if err != nil {
		return 0, fmt.Errorf("add socket %s: dump VPP memif sockets: %w", filename, err)
	}
	for _, socket := range sockets {
		if socket.SocketFilename == filename {
			return socket.SocketID, nil
		}
	}
	var added vppmsg.MemifSocketFilenameAddDelV2Reply
	if err := request(ctx, conn, &vppmsg.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: ^uint32(0), SocketFilename: filename}, &added); err != nil {
		return 0, fmt.Errorf("add socket %s: %w", filename, err)
	}
	return added.SocketID, nil
}

// removeSocketFilename removes every entry of filename from VPP's memif
// socket table that no memif of VPP's uses (VPP then closes the listener
// and removes the socket file): the agent's memifs each have their own
// filename, so one left without a memif is the agent's to remove,
// whichever failed request left it.
func removeSocketFilename(ctx context.Context, conn *vppapi.Conn, filename string) error {
	sockets, err := vppapi.Dump[vppmsg.MemifSocketFilenameDetails](ctx, conn, &vppmsg.MemifSocketFilenameDump{})
	if err != nil {
		return fmt.Errorf("remove socket %s: dump VPP memif sockets: %w", filename, err)
	}
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](ctx, conn, &vppmsg.MemifDump{})
	if err != nil {
		return fmt.Errorf("remove socket %s: dump VPP memifs: %w", filename, err)
	}
	used := map[uint32]bool{}
	for _, memif := range memifs {
		used[memif.SocketID] = true
	}
	for _, socket := range sockets {
		if socket.SocketFilename != filename || used[socket.SocketID] {
			continue
		}
		if err := request(ctx, conn, &vppmsg.MemifSocketFilenameAddDelV2{SocketID: socket.SocketID}, &vppmsg.MemifSocketFilenameAddDelV2Reply{}); err != nil {
			return fmt.Errorf("remove socket %s: %w", filename, err)
		}
	}
	return nil
}

// readBackMemif is the memif link as VPP reports it. VPP reports the ring
// and buffer size a connected peer negotiated, not the configured ones, and
// neither the queue counts nor the secret: those are taken from want when
// it names the same socket and ID (see the package doc).
func readBackMemif(memif *vppmsg.MemifDetails, socket string, want *vpp_interfaces.MemifLink) *vpp_interfaces.MemifLink {
	link := &vpp_interfaces.MemifLink{
		Master:         memif.Role == vppmsg.MemifRoleAPIMaster,
		Id:             memif.ID,
		SocketFilename: socket,
	}
	switch memif.Mode {
	case vppmsg.MemifModeAPIIP:
		link.Mode = vpp_interfaces.MemifLink_IP
	case vppmsg.MemifModeAPIPuntInject:
		link.Mode = vpp_interfaces.MemifLink_PUNT_INJECT
	}
	if want != nil && want.SocketFilename == socket && want.Id == link.Id {
		link.Secret = want.Secret
		link.RingSize, link.BufferSize = want.RingSize, want.BufferSize
		link.RxQueues, link.TxQueues = want.RxQueues, want.TxQueues
	}
	return link
}

// createLoopback makes a loopback, with the model's MAC address if it has
// one.
func createLoopback(ctx context.Context, conn *vppapi.Conn, iface *vpp_interfaces.Interface) (*InterfaceMetadata, error) {
	req := &vppmsg.CreateLoopback{}
	if iface.PhysAddress != "" {
		req.MACAddress, _ = parseMAC(iface.PhysAddress)
	}
	var created vppmsg.CreateLoopbackReply
	if err := request(ctx, conn, req, &created); err != nil {
		return nil, err
	}
	return &InterfaceMetadata{Index: created.SwIfIndex, connection: conn.Generation()}, nil
}
