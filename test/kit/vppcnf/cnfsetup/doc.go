// Package cnfsetup renders the configuration of VPP running as the memif
// slave inside a pod, from the pod's memif.json (package memifjson): VPP's
// startup.conf and setup.cli, the CLI script VPP runs once it has
// started. It is pure: the entrypoint (cmd/vppcnf) waits for memif.json
// and the sockets, writes both files and runs VPP.
//
// startup.conf keeps everything VPP makes in one private directory (its
// runtime directory: the CLI, API and stats sockets), never in /run/vpp,
// the allocation's directory the pod shares with the agent. VPP runs
// without DPDK and hugepages (4k pages for its heap, buffers and stats
// segment), with the memif and ping plugins only.
//
// setup.cli, for each interface of memif.json:
//
//	create memif socket id 1 filename /run/vpp/memif.sock
//	create interface memif id 0 socket-id 1 slave secret <MEMIF_SECRET> mode ip rx-queues 2 tx-queues 2 ring-size 1024 buffer-size 2048
//	set interface mtu packet 9000 memif1/0
//	set interface state memif1/0 up
//	set interface ip address memif1/0 10.70.0.2/24
//	ip route add 0.0.0.0/0 via 10.70.0.1 memif1/0
//
// Each distinct socket gets a socket ID from 1 in the order of the file;
// an interface is memif<socket ID>/<memif ID>. The default route of a
// family (0.0.0.0/0, ::/0) goes via the first interface whose gateway is
// of that family; an interface without a gateway (an l2 network's) gets
// its addresses only. A MAC is set (hw-addr) in ethernet mode only.
//
// Every value that lands in the script is checked to be one CLI token (no
// space, control character or #), so memif.json cannot add commands of its
// own; VPP checks the rest.
package cnfsetup
