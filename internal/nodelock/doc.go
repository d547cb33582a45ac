// Package nodelock keeps a node to one memif-agent at a time.
//
// Two agents on one node would both write the checkpoint, serve kubelet's
// device plugin socket and the node API over each other. That happens when
// the agent's pod is deleted with a grace period of 0 (kubectl delete
// --force, as the node suite does): the DaemonSet makes the new pod at once,
// while kubelet is still stopping the old one; with maxSurge above 0; and
// with two DaemonSets, or an agent started by hand, on one node. A plain
// rolling update (maxUnavailable 1) waits for the old pod to be gone. The
// agent therefore takes
// an exclusive flock(2) on a lock file beside its checkpoint before it
// reads the checkpoint or listens anywhere, and holds it until the process
// exits, when the kernel drops it (a crash or SIGKILL included, so a lock
// is never left stale). A second agent waits for it a little and then
// gives up with an error naming the holder, written into the file by it.
//
// It owns the lock file; the directory is the checkpoint's.
package nodelock
