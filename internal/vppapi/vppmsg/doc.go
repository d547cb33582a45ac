// Package vppmsg holds the VPP binary-API messages the agent uses, generated
// by scripts/vppapigen from VPP's own definitions (apijson/*.api.json, copied
// from the VPP build named in apijson/README.md), and their encoding:
// big-endian fields in definition order, fixed strings NUL-padded, variable
// strings and arrays prefixed by their length.
//
// Each message knows its name and CRC; the client (package vppapi) checks
// both against the message table VPP sends when a client connects, so a VPP
// whose definitions differ is refused by name instead of misread.
//
// The package owns encoding only: no I/O, no connection state.
package vppmsg
