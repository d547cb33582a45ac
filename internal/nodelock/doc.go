// Package nodelock keeps a node to one memif-agent at a time.
//
// Two agents on one node would both write the checkpoint, serve kubelet's
// device plugin socket and the node API over each other. That happens for
// a moment whenever a DaemonSet replaces the agent's pod: the new pod
// starts while the old one is still terminating. The agent therefore takes
// an exclusive flock(2) on a lock file beside its checkpoint before it
// reads the checkpoint or listens anywhere, and holds it until the process
// exits, when the kernel drops it (a crash or SIGKILL included, so a lock
// is never left stale). A second agent waits for it a little and then
// gives up with an error naming the holder, written into the file by it.
//
// It owns the lock file; the directory is the checkpoint's.
package nodelock
