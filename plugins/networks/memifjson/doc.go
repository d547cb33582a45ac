// Package memifjson owns memif.json, the file that tells a pod what its
// memifs got: for each memif of the allocation's socket, its memif ID,
// the socket path as the container sees it, network, mode, addresses,
// gateway, MAC, queue pairs, ring and buffer sizes and MTU. The pod's
// side of a memif (for example VPP as the memif slave) configures itself
// from it:
//
//	{"interfaces": [{"memif-id": 0, "socket": "/run/vpp/memif.sock",
//	  "network": "red", "mode": "ip", "ips": ["10.70.0.2/24"],
//	  "gateway": ["10.70.0.1"], "queues": 2, "ring-size": 1024,
//	  "buffer-size": 2048, "mtu": 9000}]}
//
// The secret is never in it (the type has no field for it): the pod gets
// it in MEMIF_SECRET only.
//
// Render is pure. Write puts the file into the allocation's directory,
// which the pod shares and can write in: through a securedir.Dir (no link
// is followed), as a temporary file in the same directory that is
// renamed over memif.json, mode 0640 and the directory's group (the group
// the pod's processes read the directory by). It is not synced: the
// wiring writes it again at its first render after each start.
//
// It lives under plugins/networks as the networks plugin's plain core; it
// imports no framework and knows nothing of networks.conf or VPP: the
// wiring fills in an Interface from what it made.
package memifjson
