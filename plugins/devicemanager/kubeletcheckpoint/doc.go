// Package kubeletcheckpoint reads the answers kubelet keeps for a device
// plugin's resource in its device manager checkpoint
// (kubelet_internal_checkpoint in the device plugin directory).
//
// kubelet writes that file (synced, then renamed into place) after each
// Allocate answer and before the container that gets the answer is
// created, and after a restart (its own or the node's) gives restarted
// containers the answers it holds without asking the plugin again; a
// container whose answer the restart lost is allocated again. So after a node restart it is
// the record of every answer a container of the node may have been
// given: the device manager restores from it what its own buffered
// journal records lost (package checkpoint's SaveBuffered).
//
// The file is kubelet's, not an interface kubelet documents (Multus's
// checkpoint package reads it the same way): its format (JSON with a
// "Data" of "PodDeviceEntries", each answer a protobuf
// ContainerAllocateResponse) is read as kubelet v1.37 writes it, and only
// the entries of the resource asked for are decoded. A kubelet that
// changed it would cost only what the device manager's last unsynced
// records held, and only after a node restart: the read fails, and the
// device manager logs and counts it; test/kubelet's real kubelet
// (TestNodeRestartRecoversAllocationsFromKubelet) catches the change when
// kubelet is upgraded there. Its checksum is not checked: it is
// computed over kubelet's Go types with kubelet's own hashing, and an
// answer this package returns is taken only when the device manager
// recognizes it as one of its own (its directory, socket and secret).
package kubeletcheckpoint
