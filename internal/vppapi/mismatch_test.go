package vppapi

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// fakeVPPVersion is what the fake socket server answers show_version with.
const fakeVPPVersion = "25.02-release"

// serveFakeVPPTable answers one client the way VPP's socket server does:
// sockclnt_create with table as the message table (name → CRC, IDs given
// here), then show_version; anything else is left unanswered. It stands
// in for a VPP of another release, which the tests cannot run.
func serveFakeVPPTable(t *testing.T, table map[string]string) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "api.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	slices.Sort(names)
	ids := map[string]uint16{"sockclnt_create": vppmsg.SockclntCreateMemclntIndex + 1}
	next := uint16(100)
	reply := &vppmsg.SockclntCreateReply{Index: 1}
	for _, name := range names {
		if _, fixed := ids[name]; !fixed {
			ids[name] = next
			next++
		}
		reply.MessageTable = append(reply.MessageTable, vppmsg.MessageTableEntry{Index: ids[name], Name: name + "_" + strings.TrimPrefix(table[name], "0x")})
	}
	reply.Count = uint16(len(reply.MessageTable))
	served := make(chan struct{})
	t.Cleanup(func() { listener.Close(); <-served })
	go func() {
		defer close(served)
		conn, err := listener.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			frame, err := readFakeFrame(conn)
			if err != nil || len(frame) < 2 {
				return
			}
			var answer []byte
			switch binary.BigEndian.Uint16(frame) {
			case ids["sockclnt_create"]:
				var create vppmsg.SockclntCreate
				vppmsg.Decode(frame[2:], &create)
				reply.Context = create.Context
				answer, _ = vppmsg.Encode(ids["sockclnt_create_reply"], reply)
			case ids["show_version"]:
				var show vppmsg.ShowVersion
				vppmsg.Decode(frame[2:], &show)
				answer, _ = vppmsg.Encode(ids["show_version_reply"], &vppmsg.ShowVersionReply{Context: show.Context, Program: "vpe", Version: fakeVPPVersion})
			default:
				continue
			}
			header := make([]byte, frameHeaderSize)
			binary.BigEndian.PutUint32(header[8:12], uint32(len(answer)))
			if _, err := conn.Write(append(header, answer...)); err != nil {
				return
			}
		}
	}()
	return socket
}

func readFakeFrame(r io.Reader) ([]byte, error) {
	header := make([]byte, frameHeaderSize)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(header[8:12]))
	_, err := io.ReadFull(r, frame)
	return frame, err
}

// generatedTable is the message table of the VPP vppmsg was generated from.
func generatedTable() map[string]string {
	table := map[string]string{}
	for name, newMessage := range vppmsg.Messages {
		table[name] = newMessage().CRC()
	}
	return table
}

func TestDialNamesTheMessagesThatDiffer(t *testing.T) {
	agentCRC := func(name string) string { return vppmsg.Messages[name]().CRC() }
	tests := []struct {
		name        string
		alter       func(table map[string]string)
		wantDiffer  []MessageMismatch
		wantMissing []string
		// wantVersion: VPP is asked its version when show_version
		// still matches.
		wantVersion string
	}{{
		name:        "one CRC changed",
		alter:       func(table map[string]string) { table["memif_create_v2"] = "0xdeadbeef" },
		wantDiffer:  []MessageMismatch{{Name: "memif_create_v2", VPPCRC: "0xdeadbeef", AgentCRC: agentCRC("memif_create_v2")}},
		wantVersion: fakeVPPVersion,
	}, {
		name: "messages missing, show_version changed",
		alter: func(table map[string]string) {
			delete(table, "memif_dump")
			delete(table, "memif_details")
			table["show_version_reply"] = "0x12345678"
		},
		wantDiffer:  []MessageMismatch{{Name: "show_version_reply", VPPCRC: "0x12345678", AgentCRC: agentCRC("show_version_reply")}},
		wantMissing: []string{"memif_details", "memif_dump"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := generatedTable()
			tt.alter(table)
			socket := serveFakeVPPTable(t, table)
			conn, err := Dial(t.Context(), socket, "vppapi-test", 0)
			if err == nil {
				conn.Close()
				t.Fatal("Dial to a VPP of other definitions succeeded")
			}
			var mismatch *APIMismatchError
			if !errors.As(err, &mismatch) {
				t.Fatalf("Dial = %v, want an *APIMismatchError", err)
			}
			if mismatch.Socket != socket || mismatch.VPPVersion != tt.wantVersion ||
				!slices.Equal(mismatch.Differ, tt.wantDiffer) || !slices.Equal(mismatch.Missing, tt.wantMissing) {
				t.Errorf("mismatch = %+v, want differ %v, missing %v, VPP version %q", mismatch, tt.wantDiffer, tt.wantMissing, tt.wantVersion)
			}
			message := err.Error()
			wants := []string{"generated from VPP " + vppmsg.VPPRelease, "run VPP " + vppmsg.VPPRelease}
			for _, differ := range tt.wantDiffer {
				wants = append(wants, differ.Name+": VPP "+differ.VPPCRC+", memif-agent "+differ.AgentCRC)
			}
			wants = append(wants, tt.wantMissing...)
			if tt.wantVersion != "" {
				wants = append(wants, "VPP "+tt.wantVersion+" at "+socket)
			}
			for _, want := range wants {
				if !strings.Contains(message, want) {
					t.Errorf("error %q does not say %q", message, want)
				}
			}
		})
	}
}

func TestDialAcceptsTheTableItWasGeneratedFrom(t *testing.T) {
	socket := serveFakeVPPTable(t, generatedTable())
	conn, err := Dial(t.Context(), socket, "vppapi-test", 0)
	if err != nil {
		t.Fatalf("Dial with the generated table: %v", err)
	}
	conn.Close()
}

// TestDialAcceptsAVPPWithoutOptionalPlugins: a VPP that lacks an optional
// plugin's messages is spoken to, and only a request of that plugin fails,
// naming it.
func TestDialAcceptsAVPPWithoutOptionalPlugins(t *testing.T) {
	table := generatedTable()
	for name := range table {
		if vppmsg.PluginOf(name) != "" {
			delete(table, name)
		}
	}
	conn, err := Dial(t.Context(), serveFakeVPPTable(t, table), "vppapi-test", 0)
	if err != nil {
		t.Fatalf("Dial to a VPP without %v: %v", vppmsg.OptionalPlugins, err)
	}
	defer conn.Close()
	var reply vppmsg.AfPacketDeleteReply
	err = conn.Request(t.Context(), &vppmsg.AfPacketDelete{HostIfName: "veth0"}, &reply)
	if !errors.Is(err, ErrNoPlugin) || !strings.Contains(err.Error(), "af_packet_plugin.so") {
		t.Fatalf("af_packet_delete without the plugin = %v, want ErrNoPlugin naming af_packet_plugin.so", err)
	}
}

// TestMessagesMatchTheRealVPP: the VPP the tests run speaks every message
// of vppmsg as generated.
func TestMessagesMatchTheRealVPP(t *testing.T) {
	v := vpp.Start(t, vpp.Plugins(vppmsg.OptionalPlugins...))
	conn := dial(t, v)
	for name := range vppmsg.Messages {
		if _, known := conn.ids[name]; !known {
			t.Errorf("VPP's table has no %s as vppmsg defines it", name)
		}
	}
	var version vppmsg.ShowVersionReply
	if err := conn.Request(t.Context(), &vppmsg.ShowVersion{}, &version); err != nil {
		t.Fatalf("show_version: %v", err)
	}
	t.Logf("VPP %s speaks the messages generated from VPP %s", version.Version, vppmsg.VPPRelease)
}
