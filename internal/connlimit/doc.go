// Package connlimit bounds the connections an HTTP server of the agent
// holds open, without ever making a new one wait ("a slow or hostile client
// delays only itself"). A limit that makes new connections
// wait, as netutil.LimitListener's, leaves a probe or a scrape in the
// kernel's accept queue behind every connection a client keeps
// reopening. At its limit, Bound's listener closes one connection not
// being served instead: from the source holding the most (a TCP client's
// address, a Unix socket client's user), the silent before one that has
// sent something, the oldest first. A probe or a scrape sends its request
// as it connects and is answered in milliseconds, so it is the last a
// flood of idle, slow or reopening connections makes room with; and on the
// probe socket kubelet's probes come as root, apart from another user's
// flood, even in the moment between a probe's connect and its request,
// while the flood's reopened connections are all younger.
//
// It owns the count of open connections and the choice of the one to
// close; the server, its timeouts and its listener stay the caller's.
// Every HTTP listener of the agent uses it: the loopback HTTP port
// (internal/agentwiring), the probe socket (plugins/health/probesocket)
// and the metrics listener (plugins/metrics/listener). The gRPC sockets
// bound their clients per user instead (plugins/nodeapi/server), or let
// only kubelet in (the device plugin socket).
package connlimit
