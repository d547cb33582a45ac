// Package listener serves the agent's Prometheus metrics, read-only, on an
// address a cluster's Prometheus can reach: GET /metrics (and GET /, a
// page naming it), nothing else, on its own TCP listener, apart from the
// loopback HTTP server whose endpoints change the agent.
//
// The address is metrics.conf's address, else $MEMIF_AGENT_POD_IP (the
// DaemonSet sets it from the downward API's status.podIP, which on
// hostNetwork is the node's IP), else 127.0.0.1; the port is metrics.conf's
// port, else 9752 (not 9191, the loopback HTTP server's and vpp-agent's).
// The server is bounded as the agent's other servers are: at most
// MaxConnections connections, short header, read and idle timeouts, at
// most MaxScrapesInFlight scrapes gathered at once, each cut off after
// ScrapeTimeout. A new connection never waits for room (internal/connlimit),
// so a flood of idle or reopening connections from one address cannot keep
// another's scrape, nor its own, unanswered.
//
// It owns the listener and its serving goroutine (Start, Close); it
// registers no metric and reads only the Gatherer it is given. It has no
// framework import: plugins/metrics is its cn-infra plugin.
package listener
