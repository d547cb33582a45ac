package vppapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// waitLimit only bounds waits for something that should happen.
const waitLimit = 30 * time.Second

func dial(t *testing.T, v *vpp.VPP) *Conn {
	t.Helper()
	conn, err := Dial(t.Context(), v.APISocket, "vppapi-test", 0)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestRequestAndDumpAgainstVPP(t *testing.T) {
	v := vpp.Start(t)
	conn := dial(t, v)
	ctx := t.Context()

	var version vppmsg.ShowVersionReply
	if err := conn.Request(ctx, &vppmsg.ShowVersion{}, &version); err != nil {
		t.Fatalf("show_version: %v", err)
	}
	if cli := v.CLI(t, "show", "version"); !strings.Contains(cli, version.Version) || version.Program != "vpe" {
		t.Errorf("show_version says program %q version %q; vppctl says %q", version.Program, version.Version, cli)
	}

	socket := filepath.Join(v.Dir, "test-memif.sock")
	var added vppmsg.MemifSocketFilenameAddDelV2Reply
	if err := conn.Request(ctx, &vppmsg.MemifSocketFilenameAddDelV2{IsAdd: true, SocketID: ^uint32(0), SocketFilename: socket}, &added); err != nil {
		t.Fatalf("memif_socket_filename_add_del_v2: %v", err)
	}
	var created vppmsg.MemifCreateV2Reply
	if err := conn.Request(ctx, &vppmsg.MemifCreateV2{Role: vppmsg.MemifRoleAPIMaster, ID: 7, SocketID: added.SocketID, Secret: "s3cret"}, &created); err != nil {
		t.Fatalf("memif_create_v2: %v", err)
	}
	if err := conn.Request(ctx, &vppmsg.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: created.SwIfIndex, Tag: "memif_test"}, &vppmsg.SwInterfaceTagAddDelReply{}); err != nil {
		t.Fatalf("sw_interface_tag_add_del: %v", err)
	}
	if err := conn.Request(ctx, &vppmsg.SwInterfaceSetFlags{SwIfIndex: created.SwIfIndex, Flags: vppmsg.IfStatusAPIFlagAdminUp}, &vppmsg.SwInterfaceSetFlagsReply{}); err != nil {
		t.Fatalf("sw_interface_set_flags: %v", err)
	}

	// VPP's own CLI shows what the API made: a master (VPP flags only
	// slaves) listening on the socket. VPP never shows the secret.
	show := v.CLI(t, "show", "memif")
	for _, want := range []string{socket, "id 7 mode ethernet", "flags admin-up"} {
		if !strings.Contains(show, want) {
			t.Errorf("show memif lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "slave") {
		t.Errorf("show memif shows a slave, want a master:\n%s", show)
	}

	memifs, err := Dump[vppmsg.MemifDetails](ctx, conn, &vppmsg.MemifDump{})
	if err != nil {
		t.Fatalf("memif_dump: %v", err)
	}
	if len(memifs) != 1 || memifs[0].SwIfIndex != created.SwIfIndex || memifs[0].ID != 7 || memifs[0].SocketID != added.SocketID ||
		memifs[0].Role != vppmsg.MemifRoleAPIMaster || memifs[0].Flags&vppmsg.IfStatusAPIFlagAdminUp == 0 {
		t.Errorf("memif_dump = %+v, want the one memif made", memifs)
	}
	interfaces, err := Dump[vppmsg.SwInterfaceDetails](ctx, conn, &vppmsg.SwInterfaceDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
	if err != nil {
		t.Fatalf("sw_interface_dump: %v", err)
	}
	tags := map[string]string{}
	for _, iface := range interfaces {
		tags[iface.InterfaceName] = iface.Tag
	}
	if len(interfaces) != 2 || tags["local0"] != "" || tags[memifs[0].IfName] != "memif_test" {
		t.Errorf("sw_interface_dump = %v (name: tag), want local0 and %s tagged memif_test", tags, memifs[0].IfName)
	}

	// A refused request is a *VPPError naming the message.
	err = conn.Request(ctx, &vppmsg.MemifDelete{SwIfIndex: 1000}, &vppmsg.MemifDeleteReply{})
	var vppErr *VPPError
	if !errors.As(err, &vppErr) || vppErr.Message != "memif_delete" {
		t.Errorf("memif_delete of an unknown interface = %v, want a *VPPError for memif_delete", err)
	}
}

// TestConcurrentCalls runs dumps and requests from many goroutines on one
// connection: each gets its own answers.
func TestConcurrentCalls(t *testing.T) {
	v := vpp.Start(t)
	conn := dial(t, v)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			var version vppmsg.ShowVersionReply
			errs <- conn.Request(t.Context(), &vppmsg.ShowVersion{}, &version)
		}()
		go func() {
			defer wg.Done()
			interfaces, err := Dump[vppmsg.SwInterfaceDetails](t.Context(), conn, &vppmsg.SwInterfaceDump{SwIfIndex: ^vppmsg.InterfaceIndex(0)})
			if err == nil && (len(interfaces) != 1 || interfaces[0].InterfaceName != "local0") {
				err = errors.New("sw_interface_dump did not return local0 alone")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestTimeout: a peer that accepts but never answers fails the dial within
// the timeout instead of hanging.
func TestTimeout(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "silent.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		conn, err := listener.Accept()
		if err == nil {
			defer conn.Close()
			buf := make([]byte, 1024)
			for {
				if _, err := conn.Read(buf); err != nil {
					return
				}
			}
		}
	}()
	_, err = Dial(t.Context(), socket, "vppapi-test", 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "sockclnt_create_reply") {
		t.Errorf("Dial to a silent peer = %v, want a timeout reading sockclnt_create_reply", err)
	}
}

func TestClientReconnectsWhenVPPRestarts(t *testing.T) {
	v := vpp.Start(t)
	var mu sync.Mutex
	var connects, disconnects int
	client := NewClient(ClientConfig{
		Socket: v.APISocket, Name: "vppapi-test",
		OnConnect:    func(*Conn) { mu.Lock(); connects++; mu.Unlock() },
		OnDisconnect: func(error) { mu.Lock(); disconnects++; mu.Unlock() },
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { client.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	counts := func(wantConnects int) error {
		mu.Lock()
		defer mu.Unlock()
		if connects != wantConnects || disconnects < wantConnects-1 {
			return fmt.Errorf("%d connects, %d disconnects", connects, disconnects)
		}
		return nil
	}
	poll.Until(t, waitLimit, "client connects", func() error { return counts(1) })
	v.Restart(t)
	poll.Until(t, waitLimit, "client connects again after a VPP restart", func() error { return counts(2) })
	conn, err := client.Conn()
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Request(t.Context(), &vppmsg.ShowVersion{}, &vppmsg.ShowVersionReply{}); err != nil {
		t.Errorf("show_version after reconnect: %v", err)
	}
	v.Kill(t)
	poll.Until(t, waitLimit, "client notices VPP was killed", func() error {
		if _, err := client.Conn(); !errors.Is(err, ErrNotConnected) {
			return fmt.Errorf("Conn() = %v, want ErrNotConnected", err)
		}
		return nil
	})
}
