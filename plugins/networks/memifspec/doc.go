// Package memifspec owns the memif spec: what a pod asks of one memif
// (its network, mode, queues, ring and buffer sizes, rx mode, MTU,
// addresses, MAC), the two ways it arrives, and why one is refused.
//
// The spec is the same JSON object in both paths; every field but network
// is optional:
//
//	{"network": "red", "container": "app", "memif-id": 0, "mode": "ip",
//	 "queues": 2, "ring-size": 1024, "buffer-size": 2048,
//	 "rx-mode": "polling", "mtu": 9000, "ips": ["10.70.0.11/24"],
//	 "mac": "02:fe:00:00:00:01"}
//
// DecodeAnnotation reads the pod annotation memif.contivpp.io/networks, a
// JSON list of specs (the convention of Multus's
// k8s.v1.cni.cncf.io/networks). DecodeConfig reads a DRA claim's opaque
// config for driver memif.contivpp.io: apiVersion
// memif.contivpp.io/v1alpha1, kind MemifConfig, and the spec's fields
// beside them. Both are strict: an unknown or repeated field, a field
// spelt in another case, trailing data or an input above its size bound
// is refused. They check what needs no network: names, enumerations,
// VPP's limits (queues 1..255 as VPP's memif_create takes them; the ring
// size a power of two up to 2^14, the largest VPP's memif master accepts
// from its peer, MEMIF_MAX_LOG2_RING_SIZE; the buffer size in VPP's
// 16-bit field), a unicast MAC, address syntax, and that no two specs
// name one memif.
//
// Spec.Resolve then checks a spec against the networks (the network
// exists, carries the mode: l3 takes ip, l2 ethernet; the MTU fits it; the
// addresses are in its subnet) and fills in the defaults: the network's
// mode, rx mode and MTU, and VPP's queue count, ring size and buffer size,
// so that what the pod is told (memif.json) is what VPP does.
//
// Every refusal is an *Error with a Reason, a fixed metric label; ReasonOf
// also maps the ipam package's errors (an address taken, a subnet
// exhausted) to theirs. Messages repeat at most a few dozen bytes of the
// input, quoted.
//
// It lives under plugins/networks, the networks plugin's plain core; it
// holds no state and imports no framework, so the device manager, the DRA
// driver and the memif wiring may import it as they import an api package.
package memifspec
