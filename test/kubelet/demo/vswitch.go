package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// vswitchPoll is how often VPP is asked while waiting for a memif or a link.
const vswitchPoll = 50 * time.Millisecond

// vswitch is the real VPP the agent programs: the demo only reads it, over
// its own connection to VPP's binary API.
type vswitch struct {
	vpp     *vpp.VPP
	conn    *vppapi.Conn
	version string
}

// startVswitch starts VPP (scripts/vpp.sh's) under dir.
func startVswitch(ctx context.Context, dir string) (*vswitch, error) {
	prefix, err := vpp.Prefix()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	v, err := vpp.Launch(prefix, dir)
	if err != nil {
		if v != nil {
			v.Stop()
		}
		return nil, err
	}
	sw := &vswitch{vpp: v}
	if sw.conn, err = vppapi.Dial(ctx, v.APISocket, "memif-demo", 0); err != nil {
		v.Stop()
		return nil, err
	}
	var version vppmsg.ShowVersionReply
	if err := sw.conn.Request(ctx, &vppmsg.ShowVersion{}, &version); err != nil {
		sw.stop()
		return nil, err
	}
	sw.version = version.Version
	return sw, nil
}

func (sw *vswitch) stop() error {
	sw.conn.Close()
	return sw.vpp.Stop()
}

// vppMemif is one pod memif as VPP holds it.
type vppMemif struct {
	sw *vswitch
	// name is VPP's interface name (memifN/M), tag the agent's name for it.
	name, tag string
}

// waitMemif waits until VPP has a master memif on socket, as the agent
// creates it from the pod's allocation.
func (sw *vswitch) waitMemif(ctx context.Context, socket string) (*vppMemif, error) {
	for {
		memif, err := sw.findMemif(ctx, socket)
		if err != nil || memif != nil {
			return memif, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("VPP has no memif on %s: %w; see the agent's log", socket, ctx.Err())
		case <-time.After(vswitchPoll):
		}
	}
}

func (sw *vswitch) findMemif(ctx context.Context, socket string) (*vppMemif, error) {
	sockets, err := vppapi.Dump[vppmsg.MemifSocketFilenameDetails](ctx, sw.conn, &vppmsg.MemifSocketFilenameDump{})
	if err != nil {
		return nil, err
	}
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](ctx, sw.conn, &vppmsg.MemifDump{})
	if err != nil {
		return nil, err
	}
	interfaces, err := vppapi.Dump[vppmsg.SwInterfaceDetails](ctx, sw.conn, &vppmsg.SwInterfaceDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if err != nil {
		return nil, err
	}
	for _, s := range sockets {
		for _, memif := range memifs {
			if s.SocketFilename != socket || memif.SocketID != s.SocketID || memif.Role != vppmsg.MemifRoleAPIMaster {
				continue
			}
			for _, iface := range interfaces {
				if iface.SwIfIndex == memif.SwIfIndex {
					return &vppMemif{sw: sw, name: iface.InterfaceName, tag: iface.Tag}, nil
				}
			}
		}
	}
	return nil, nil
}

// hasSocket tells whether VPP still has socket among its memif socket
// filenames.
func (sw *vswitch) hasSocket(ctx context.Context, socket string) (bool, error) {
	sockets, err := vppapi.Dump[vppmsg.MemifSocketFilenameDetails](ctx, sw.conn, &vppmsg.MemifSocketFilenameDump{})
	if err != nil {
		return false, err
	}
	for _, s := range sockets {
		if s.SocketFilename == socket {
			return true, nil
		}
	}
	return false, nil
}

// linkUp reads the memif's link state from VPP.
func (m *vppMemif) linkUp(ctx context.Context) (bool, error) {
	memifs, err := vppapi.Dump[vppmsg.MemifDetails](ctx, m.sw.conn, &vppmsg.MemifDump{})
	if err != nil {
		return false, err
	}
	for _, memif := range memifs {
		if memif.IfName == m.name {
			return memif.Flags&vppmsg.IfStatusAPIFlagLinkUp != 0, nil
		}
	}
	return false, fmt.Errorf("VPP no longer has memif %s", m.name)
}

// WaitLinkUp waits until VPP reports the link up.
func (m *vppMemif) WaitLinkUp(ctx context.Context) error {
	for {
		up, err := m.linkUp(ctx)
		if err != nil || up {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("VPP memif %s still down: %w; a wrong secret shows in the agent's log as \"incorrect secret\"", m.name, ctx.Err())
		case <-time.After(vswitchPoll):
		}
	}
}

// rxPacketsLine is VPP's receive counter in show interface.
var rxPacketsLine = regexp.MustCompile(`rx packets\s+(\d+)`)

// rxPackets reads the memif's receive counter from VPP.
func (m *vppMemif) rxPackets(ctx context.Context) (uint64, error) {
	var reply vppmsg.CliInbandReply
	if err := m.sw.conn.Request(ctx, &vppmsg.CliInband{Cmd: "show interface " + m.name}, &reply); err != nil {
		return 0, err
	}
	match := rxPacketsLine.FindStringSubmatch(reply.Reply)
	if match == nil {
		return 0, nil
	}
	return strconv.ParseUint(match[1], 10, 64)
}

// RxRate counts received packets per second over window.
func (m *vppMemif) RxRate(ctx context.Context, window time.Duration) (float64, uint64, error) {
	before, err := m.rxPackets(ctx)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(window):
	}
	after, err := m.rxPackets(ctx)
	if err != nil {
		return 0, 0, err
	}
	if after < before {
		return 0, after, errors.New("VPP's counters went back while measuring")
	}
	return float64(after-before) / time.Since(start).Seconds(), after, nil
}

// vswitchDir is where VPP's sockets live in the demo's work directory.
func vswitchDir(workDir string) string { return filepath.Join(workDir, "vpp") }
