package vppapi

import (
	"fmt"
	"strings"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// APIMismatchError is Dial's error when VPP's message table differs from
// the messages of package vppmsg: the agent was generated from another
// VPP release (vppmsg.VPPRelease) than the one it reached, and would
// misread it.
type APIMismatchError struct {
	// Socket is VPP's API socket.
	Socket string
	// VPPVersion is what VPP says it is (show_version), when that message
	// is one both sides still agree on; empty otherwise.
	VPPVersion string
	// Differ are the messages VPP defines with another CRC, by name.
	Differ []MessageMismatch
	// Missing are the messages VPP does not define, by name.
	Missing []string
}

// MessageMismatch is one message whose definition differs.
type MessageMismatch struct {
	Name string
	// VPPCRC is the CRC in VPP's table, AgentCRC the one vppmsg was
	// generated with.
	VPPCRC, AgentCRC string
}

func (e *APIMismatchError) Error() string {
	var b strings.Builder
	vpp := "VPP"
	if e.VPPVersion != "" {
		vpp = "VPP " + e.VPPVersion
	}
	fmt.Fprintf(&b, "%s at %s speaks another binary API than memif-agent, which was generated from VPP %s:", vpp, e.Socket, vppmsg.VPPRelease)
	if len(e.Differ) > 0 {
		fmt.Fprintf(&b, " %d messages differ (", len(e.Differ))
		for i, m := range e.Differ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s: VPP %s, memif-agent %s", m.Name, m.VPPCRC, m.AgentCRC)
		}
		b.WriteString(")")
	}
	if len(e.Missing) > 0 {
		if len(e.Differ) > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %d messages missing, is their plugin loaded? (%s)", len(e.Missing), strings.Join(e.Missing, ", "))
	}
	fmt.Fprintf(&b, "; run VPP %s, or regenerate memif-agent's messages from this VPP's .api.json (internal/vppapi/vppmsg/apijson/README.md)", vppmsg.VPPRelease)
	return b.String()
}
