// Package loopback gives tests a free loopback TCP port for a real server
// (the agent's HTTP endpoint) that the test itself starts.
//
// It owns only the finding of the port; it must not listen on anything
// but 127.0.0.1.
package loopback
