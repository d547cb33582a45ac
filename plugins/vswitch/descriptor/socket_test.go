package descriptor_test

import (
	"testing"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// socketEntries returns VPP's memif socket table: the IDs of each
// filename.
func socketEntries(t *testing.T, v *vpp.VPP) map[string][]uint32 {
	t.Helper()
	entries := map[string][]uint32{}
	for _, socket := range dump[vppmsg.MemifSocketFilenameDetails](t, viewConn(t, v), &vppmsg.MemifSocketFilenameDump{}) {
		entries[socket.SocketFilename] = append(entries[socket.SocketFilename], socket.SocketID)
	}
	return entries
}

// TestSocketFilenameLeftInVPPIsTakenBackAndRemoved: an add of a socket
// filename that timed out may be done by VPP after the agent gave up. The
// agent's create reuses that entry instead of adding a second one, and its
// delete removes every entry of the filename no memif uses, so that
// nothing of a deleted pod's stays in VPP's socket table.
func TestSocketFilenameLeftInVPPIsTakenBackAndRemoved(t *testing.T) {
	v := vpp.Start(t)
	pod := memif(v.Dir, "pod-a", nil)
	socket := pod.GetMemif().SocketFilename
	key := vpp_interfaces.InterfaceKey(pod.Name)

	// What an add that timed out leaves: VPP did it after the agent gave up.
	v.CLI(t, "create", "memif", "socket", "id", "7", "filename", socket)
	a := startAgent(t, v)
	a.commit(t, map[string]proto.Message{key: pod})
	if got := socketEntries(t, v)[socket]; len(got) != 1 || got[0] != 7 {
		t.Errorf("with the memif made VPP holds %s as socket IDs %v, want the one it had, [7]", socket, got)
	}
	a.commit(t, map[string]proto.Message{key: nil})
	if got := socketEntries(t, v)[socket]; len(got) != 0 {
		t.Errorf("after the delete VPP still holds %s as socket IDs %v", socket, got)
	}

}
