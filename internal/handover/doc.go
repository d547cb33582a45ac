// Package handover passes a node from a running memif-agent to the one
// that replaces it in a DaemonSet rolling update with maxSurge, so that
// kubelet's admissions never find no agent to answer.
//
// The agent that holds the node lock (package nodelock) serves a Unix
// socket beside it (Serve). A new agent that finds the lock held asks for
// the node there (Request), naming its pod UID: the holder's device plugin
// and DRA sockets for that pod are then known to both. The holder, in its
// Holder.HandOver, forwards from then on every admission kubelet sends it
// to the successor's sockets (which answer once the successor serves),
// finishes the admissions and events it already took, stops listening on
// the node's shared addresses and releases the lock; then it answers
// "released" and the successor takes the lock. The successor says
// "serving" on the same connection once kubelet has registered it: the
// holder then stops serving kubelet (Holder.SuccessorServing), and waits
// for its pod to be deleted. Should the successor exit before it serves,
// the connection ends without "serving" (Holder.SuccessorGone): the
// holder, which no longer owns the node's state, stops, and kubelet
// restarts it as a new agent that takes the lock again.
//
// The protocol is one JSON object per line; the socket is mode 0600 in the
// checkpoint's directory, so only the agent's user (root) reaches it.
// Even so the holder trusts no request: each connection is read on its
// own, and one that sends nothing within Config.RequestTimeout is told so
// and dropped, so that a silent or slow client delays only itself; the
// successor's pod UID, which names its kubelet sockets, must be one
// Kubernetes makes (ValidatePodUID: no path separator, no ".."); and a
// request is weighed only once no other handover is, and only if its
// sender is still there (its connection open, the process that connected
// alive when this agent sees its PID namespace), so that the node is never
// handed to a successor that gave up or exited while it waited.
//
// It owns the handover socket and the connection; what a holder does to
// hand over is its Holder's.
package handover
