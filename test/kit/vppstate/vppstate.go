package vppstate

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// pollInterval is how often VPP is asked while waiting for a memif or a
// link.
const pollInterval = 50 * time.Millisecond

// State is a reading connection to VPP's binary API.
type State struct {
	conn *vppapi.Conn
}

// Dial connects to VPP's API socket; VPP lists the connection as
// clientName.
func Dial(ctx context.Context, socket, clientName string) (*State, error) {
	conn, err := vppapi.Dial(ctx, socket, clientName, 0)
	if err != nil {
		return nil, err
	}
	return &State{conn: conn}, nil
}

// Close ends the connection.
func (s *State) Close() error { return s.conn.Close() }

// Version is VPP's version (show version).
func (s *State) Version(ctx context.Context) (string, error) {
	var version vppmsg.ShowVersionReply
	if err := s.conn.Request(ctx, &vppmsg.ShowVersion{}, &version); err != nil {
		return "", err
	}
	return version.Version, nil
}

// CLI runs a vppctl command through the binary API and returns its output.
func (s *State) CLI(ctx context.Context, command string) (string, error) {
	var reply vppmsg.CliInbandReply
	if err := s.conn.Request(ctx, &vppmsg.CliInband{Cmd: command}, &reply); err != nil {
		return "", fmt.Errorf("VPP CLI %q: %w", command, err)
	}
	return reply.Reply, nil
}

// Memif is one pod memif as VPP holds it.
type Memif struct {
	// Name is VPP's interface name (memifN/M); Tag is the agent's tag for
	// it (memif-agent:memif_<namespace>_<pod>_<container>_<id>, package
	// plugins/vswitch/owner).
	Name, Tag string
	SwIfIndex vppmsg.InterfaceIndex
}

// FindMemif returns the master memif VPP holds on socket, nil when there
// is none.
func (s *State) FindMemif(ctx context.Context, socket string) (*Memif, error) {
	sockets, err := vppapi.Dump[vppmsg.MemifSocketFilenameDetails](ctx, s.conn, &vppmsg.MemifSocketFilenameDump{})
	if err != nil {
		return nil, err
	}
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](ctx, s.conn, &vppmsg.MemifDump{})
	if err != nil {
		return nil, err
	}
	interfaces, err := vppapi.Dump[vppmsg.SwInterfaceDetails](ctx, s.conn, &vppmsg.SwInterfaceDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if err != nil {
		return nil, err
	}
	for _, sock := range sockets {
		for _, memif := range memifs {
			if sock.SocketFilename != socket || memif.SocketID != sock.SocketID || memif.Role != vppmsg.MemifRoleAPIMaster {
				continue
			}
			for _, iface := range interfaces {
				if iface.SwIfIndex == memif.SwIfIndex {
					return &Memif{Name: iface.InterfaceName, Tag: iface.Tag, SwIfIndex: iface.SwIfIndex}, nil
				}
			}
		}
	}
	return nil, nil
}

// WaitMemif waits until VPP holds a master memif on socket, as the agent
// creates it from a pod's allocation.
func (s *State) WaitMemif(ctx context.Context, socket string) (*Memif, error) {
	for {
		memif, err := s.FindMemif(ctx, socket)
		if err != nil || memif != nil {
			return memif, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("VPP has no memif on %s: %w; see the agent's log", socket, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// HasSocket tells whether VPP still lists socket among its memif socket
// filenames.
func (s *State) HasSocket(ctx context.Context, socket string) (bool, error) {
	sockets, err := vppapi.Dump[vppmsg.MemifSocketFilenameDetails](ctx, s.conn, &vppmsg.MemifSocketFilenameDump{})
	if err != nil {
		return false, err
	}
	for _, sock := range sockets {
		if sock.SocketFilename == socket {
			return true, nil
		}
	}
	return false, nil
}

// LinkUp reads the memif's link state: up once a client with the right
// secret is connected.
func (s *State) LinkUp(ctx context.Context, m *Memif) (bool, error) {
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](ctx, s.conn, &vppmsg.MemifDump{})
	if err != nil {
		return false, err
	}
	for _, memif := range memifs {
		if memif.SwIfIndex == m.SwIfIndex {
			return memif.Flags&vppmsg.IfStatusAPIFlagLinkUp != 0, nil
		}
	}
	return false, fmt.Errorf("VPP no longer has memif %s", m.Name)
}

// WaitLinkUp waits until VPP reports the memif's link up.
func (s *State) WaitLinkUp(ctx context.Context, m *Memif) error {
	for {
		up, err := s.LinkUp(ctx, m)
		if err != nil || up {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("VPP memif %s still down: %w; a wrong secret shows in the agent's log as \"incorrect secret\"", m.Name, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// Counters are a VPP interface's packet counters (show interface).
type Counters struct {
	RxPackets, TxPackets, Drops uint64
}

// counterLine is one counter of show interface.
var counterLine = regexp.MustCompile(`(?m)\b(rx packets|tx packets|drops)\s+(\d+)\s*$`)

// Counters reads the memif's counters from VPP's show interface; a counter
// VPP does not print is zero.
func (s *State) Counters(ctx context.Context, m *Memif) (Counters, error) {
	out, err := s.CLI(ctx, "show interface "+m.Name)
	if err != nil {
		return Counters{}, err
	}
	var c Counters
	for _, match := range counterLine.FindAllStringSubmatch(out, -1) {
		value, err := strconv.ParseUint(match[2], 10, 64)
		if err != nil {
			return Counters{}, fmt.Errorf("VPP's show interface %s: counter %s: %w", m.Name, match[1], err)
		}
		switch match[1] {
		case "rx packets":
			c.RxPackets = value
		case "tx packets":
			c.TxPackets = value
		case "drops":
			c.Drops = value
		}
	}
	return c, nil
}

// BridgeDomain is a bridge domain as VPP holds it.
type BridgeDomain struct {
	ID  uint32
	Tag string
	// Members are the interfaces in it.
	Members []vppmsg.InterfaceIndex
}

// BridgeDomain returns the agent's bridge domain name (an l2 network's,
// or memifwiring.conf's bridge-domain), nil when VPP has none.
func (s *State) BridgeDomain(ctx context.Context, name string) (*BridgeDomain, error) {
	tag := owner.Tag(name)
	domains, err := vppapi.Dump[vppmsg.BridgeDomainDetails](ctx, s.conn, &vppmsg.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if err != nil {
		return nil, err
	}
	for _, domain := range domains {
		if domain.BdTag == tag {
			bd := &BridgeDomain{ID: domain.BdID, Tag: tag}
			for _, member := range domain.SwIfDetails {
				bd.Members = append(bd.Members, member.SwIfIndex)
			}
			return bd, nil
		}
	}
	return nil, nil
}

// RxRate counts the packets VPP receives on the memif per second over
// window, and returns the receive counter at its end.
func (s *State) RxRate(ctx context.Context, m *Memif, window time.Duration) (float64, uint64, error) {
	before, err := s.Counters(ctx, m)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(window):
	}
	after, err := s.Counters(ctx, m)
	if err != nil {
		return 0, 0, err
	}
	if after.RxPackets < before.RxPackets {
		return 0, after.RxPackets, fmt.Errorf("VPP's counters of %s went back while measuring", m.Name)
	}
	return float64(after.RxPackets-before.RxPackets) / time.Since(start).Seconds(), after.RxPackets, nil
}
