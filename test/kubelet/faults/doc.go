// Package faults is the memif-agent's fault and abuse suite: the real
// memif-agent binary killed with SIGKILL in the middle of Allocate calls,
// kubelet's real device manager restarted twenty times, a real dockerd
// stopped while pods come and go, a socket root that turns read-only or
// full, bad checkpoints, hostile configuration, malformed device and API
// requests, and the security properties a node operator relies on (file
// and socket modes, no secret in any log line or HTTP answer, HTTP on
// loopback).
//
// The tests run in a private mount namespace (kubelettest.Main) as root,
// so that kubelet's device-plugin directory and the small filesystems the
// tests mount are theirs alone. TestMain builds memif-agent and memifctl
// once; every test starts its own agent with a config directory of
// temporary paths.
//
// The package only drives and observes; it must not reach into the
// agent's packages beyond their public API types (the node API client and
// kubelet's device plugin API).
package faults
