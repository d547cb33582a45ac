package vppstate_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kit/vpp"
	"github.com/contivpp/memif-agent/test/kit/vppstate"
)

const waitLimit = time.Minute

// TestReadsAMemifAsVPPHoldsIt makes a memif master with vppctl, as the
// agent would over the API, and a DPDK memif client sending to it.
func TestReadsAMemifAsVPPHoldsIt(t *testing.T) {
	v := vpp.Start(t)
	socket := filepath.Join(t.TempDir(), "memif.sock")
	v.CLI(t, "create", "memif", "socket", "id", "1", "filename", socket)
	v.CLI(t, "create", "interface", "memif", "id", "0", "socket-id", "1", "master", "secret", "vppstate-test")
	v.CLI(t, "set", "interface", "state", "memif1/0", "up")

	s, err := vppstate.Dial(t.Context(), v.APISocket, "vppstate-test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if version, err := s.Version(t.Context()); err != nil || !strings.Contains(v.CLI(t, "show", "version"), version) {
		t.Errorf("Version = %q, %v; vppctl show version says %q", version, err, v.CLI(t, "show", "version"))
	}
	if memif, err := s.FindMemif(t.Context(), filepath.Join(t.TempDir(), "other.sock")); err != nil || memif != nil {
		t.Errorf("FindMemif on a socket VPP does not have = %+v, %v; want none", memif, err)
	}
	memif, err := s.FindMemif(t.Context(), socket)
	if err != nil || memif == nil || memif.Name != "memif1/0" {
		t.Fatalf("FindMemif(%s) = %+v, %v; want memif1/0", socket, memif, err)
	}
	if has, err := s.HasSocket(t.Context(), socket); err != nil || !has {
		t.Errorf("HasSocket(%s) = %v, %v; want true", socket, has, err)
	}
	if up, err := s.LinkUp(t.Context(), memif); err != nil || up {
		t.Errorf("LinkUp with no client = %v, %v; want down", up, err)
	}
	if bd, err := s.BridgeDomain(t.Context(), "pods"); err != nil || bd != nil {
		t.Errorf("BridgeDomain(pods) on a VPP with none = %+v, %v; want none", bd, err)
	}

	client, err := testpmd.StartVswitch(t.Context(), testpmd.VswitchConfig{Socket: socket, Secret: "vppstate-test", Client: true,
		ForwardMode: "txonly", LogPath: filepath.Join(t.TempDir(), "client.log")})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := s.WaitLinkUp(ctx, memif); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "VPP's show interface counts the client's packets", func() error {
		counters, err := s.Counters(t.Context(), memif)
		if err == nil && counters.RxPackets == 0 {
			err = errors.New("rx packets 0 in:\n" + v.CLI(t, "show", "interface", memif.Name) + v.CLI(t, "show", "memif"))
		}
		return err
	})
	// A window in which a loaded machine gives the client no CPU counts
	// nothing: wait for one that counts packets.
	poll.Until(t, waitLimit, "RxRate counts the client's packets", func() error {
		rate, received, err := s.RxRate(t.Context(), memif, 200*time.Millisecond)
		if err == nil && (rate <= 0 || received == 0) {
			err = fmt.Errorf("RxRate = %v packets/s, %d received; want some", rate, received)
		}
		return err
	})
}
