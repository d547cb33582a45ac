// Package agenttest runs the real memif-agent binary for the suites that
// test it from outside (faults, benchmarks): it builds the binaries once
// per test binary (Main), writes each agent a config directory whose every
// path is under a private temporary directory (New), starts it and waits
// until its readiness probe passes (asked on its probe socket, as
// kubelet's exec probe asks it) and its device plugin socket is there
// (Start), and kills, stops or waits for it.
//
// An agent's log file accumulates every run; when a test fails its tail is
// logged, and a data race the race detector reports in the agent fails the
// test. Readings of the running process (open fds, resident memory,
// goroutines, HTTP and gRPC clients) are methods of Agent.
//
// The package owns the agent's process and config files; it must not know
// what a suite asserts, and it never touches kubelet or Docker, which the
// suites run themselves (kubelettest, dockerd).
package agenttest
