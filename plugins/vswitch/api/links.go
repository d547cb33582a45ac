package api

import "time"

// WrongSecret is VPP's reason for refusing a memif's pod side that
// presented another secret.
const WrongSecret = "incorrect secret"

// MemifLink is the link of one of the agent's memifs as VPP last showed
// it, with its counters.
type MemifLink struct {
	// Name is the interface model's name (memif_<namespace>_<pod>_...).
	Name string
	// VPPName is VPP's own name, e.g. memif1/0.
	VPPName string
	// Up is true while the pod side is connected.
	Up bool
	// DownReason is why VPP dropped the last pod side (WrongSecret, or
	// "the pod side said: ..."); empty while up or when none came yet.
	DownReason string
	// DownSince is when the agent first saw the link down, this time;
	// zero while up.
	DownSince time.Time
	// Counters are VPP's counters of the interface; zero until read.
	Counters Counters
}

// Counters are VPP's interface counters of a memif.
type Counters struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
	// Drops are the packets from the pod that VPP dropped.
	Drops uint64
}

// LinkReader offers the memifs' links as the vswitch plugin last read
// them from VPP. Its method is safe from any goroutine and does no I/O.
type LinkReader interface {
	// MemifLinks returns the agent's memifs' links; none while VPP is
	// away or not programmed.
	MemifLinks() []MemifLink
}

// LinkEvents is told what the vswitch plugin sees happen to memif links
// that their pods should know of. Its methods are called from the link
// watcher's goroutine and must return at once.
type LinkEvents interface {
	// WrongSecret: VPP refused link's pod side, which presented another
	// secret than the memif's (link.DownReason is WrongSecret). Told once
	// each time VPP refuses it anew.
	WrongSecret(link MemifLink)
	// LinkDown: link has been down with a reason (VPP refused its pod
	// side, or the pod side left) for longer than grace. Told once per
	// time down; a link whose pod side has not come yet is not down for
	// a reason.
	LinkDown(link MemifLink, grace time.Duration)
}
