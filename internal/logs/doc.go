// Package logs owns the one logging interface of the agent's packages:
// a message that says what happened, and the things it happened to as
// key/value pairs, as klog's InfoS and ErrorS write them. Plain packages
// take a Logger; the plugins hand them their cn-infra logger through
// FromPlugin, so that every line the agent writes carries the same
// structure whichever package wrote it.
package logs
