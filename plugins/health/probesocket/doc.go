// Package probesocket serves the agent's probes (liveness, readiness) over
// HTTP on a Unix socket that only root may connect to, and asks them the
// way kubelet's exec probe does (memif-agent probe).
//
// Why a socket of their own: the agent's HTTP port is on loopback, where
// every local user can open connections. However the HTTP server bounds
// them, an unprivileged user holding a few thousand connections queues
// kubelet's probes behind its own in the kernel's accept queue, the probes
// time out, and kubelet restarts the agent. The socket is mode 0600, owned
// by the agent's user (root): connect(2) needs write access to it, so no
// other user can open a connection, and kubelet's exec probe, running in
// the agent's container as root, can. Its connections are bounded too
// (maxConnections, short timeouts), so that even root's stray clients
// cannot grow the agent's descriptors, and never make a probe wait: at the
// limit one not being served is closed (internal/connlimit).
//
// It owns the socket file, which it removes when it stops (only while it
// is still the one it made: a replacement agent may already serve there),
// and the goroutine that serves it. What the probes answer is the
// caller's handler.
package probesocket
