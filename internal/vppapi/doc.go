// Package vppapi is a client of VPP's binary API over its socket transport
// (the socksvr socket, /run/vpp/api.sock by default).
//
// Dial connects: it sends sockclnt_create, receives VPP's message table
// (name_crc → ID) and checks every message of package vppmsg against it, so
// that a VPP with other definitions is refused instead of misread. The
// refusal is an *APIMismatchError: it names each message whose CRC
// differs and each one VPP lacks, the VPP release the agent's messages
// were generated from (vppmsg.VPPRelease) and, when show_version still
// matches, the version of the VPP that was reached. Conn.Request sends a request and waits
// for its reply (a non-zero retval is a *VPPError); Dump sends a dump
// request followed by control_ping with the same context and collects the
// details until the ping's reply. Every call is bounded by its context, or
// by the connection's timeout when the context has none. Conn answers VPP's
// keepalives itself. The reader hands each message to the call of its
// context, which most messages carry right after their ID and a few
// (sw_interface_rx_placement_details) after the client's index: where is
// learnt from each message's encoding. Events carry no context: Watch
// hands each event of a kind to a function, and WatchInterfaceEvents
// subscribes to VPP's interface events (want_interface_events) on a
// connection; a subscription ends with its connection.
//
// Client keeps one connection: Run dials until VPP answers, reports each
// connection and each loss, and dials again when VPP restarts. Calls made
// while VPP is away fail at once with ErrNotConnected rather than wait.
//
// The package owns the socket and its reader goroutine; it knows nothing of
// interfaces or of the agent's models.
package vppapi
