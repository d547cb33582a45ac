// Package server implements the node-local gRPC API (memifv1.MemifAgent)
// over the device manager's DeviceManagerAPI and the controller's event
// history, and serves it on a Unix socket.
//
// It owns the API socket file and the conversion from the agent's Go types
// to the API messages. It reads the device manager and the event history and
// never changes them. Secrets leave the process only when a request sets
// include_secrets; the socket's mode (0600 by default) decides who may ask.
// A pod's namespace and name are checked against Kubernetes' limits (a
// DNS-1123 label of 63 bytes, a subdomain of 253) before they are in any
// message; a refusal is InvalidArgument and quotes the input once, cut to
// 100 bytes (configfile.Echo).
//
// No client holds the agent's memory: every connection carries its
// client's user ID (SO_PEERCRED, peerCredentials); watchers are capped in
// all and per user (WatchLimits), and one that falls behind is ended with
// ResourceExhausted rather than kept blocked on a client that does not
// read; a user's connections, a connection's calls, its idle time and an
// unanswered ping are bounded by the gRPC server's options.
package server
