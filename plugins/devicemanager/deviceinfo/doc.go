// Package deviceinfo writes the device plugin's device-info files, as the
// Network Plumbing WG's device-info spec v1.1 names them: one file per
// allocated device of the device plugin's resource,
//
//	<dir>/<resource name, "/" replaced by "-">-<device ID>-device.json
//
// (dir by default /var/run/k8s.cni.cncf.io/devinfo/dp, the spec's), holding
//
//	{"type":"memif","version":"1.1.0",
//	 "memif":{"role":"slave","path":"/run/vpp/memif.sock","mode":"ethernet"}}
//
// The role is the pod's: the spec's "slave" is the side that attaches to
// the socket the host made (VPP is the master). The path is the socket as
// the container sees it, and the mode the memif's ("ethernet" or "ip").
// A NetworkAttachmentDefinition naming the resource
// (k8s.v1.cni.cncf.io/resourceName) makes Multus copy the file of the
// pod's device into the pod's network-status annotation. The secret is
// never in it: the type has no field for it.
//
// The directory is shared with other device plugins (SR-IOV writes there
// too): Files makes it when missing (0755), refuses one another user or a
// group could change (internal/securedir), and touches only the files of
// its own resource's devices. Each file is written atomically (a
// temporary file in the directory renamed over it, mode 0644: nothing in
// it is secret, and Multus and the CNI plugins that read it run as root),
// and not synced: the directory is on tmpfs on a node, and Ensure writes
// every held device's file again at the agent's start. A write that
// fails removes the files the call wrote, so that the caller can refuse
// the allocation with nothing of it left.
//
// It is plain Go with no framework import: the device manager
// (plugins/devicemanager/manager) calls it where it makes and releases
// allocations, on its event loop, one call at a time.
package deviceinfo
