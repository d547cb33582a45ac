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
package server
