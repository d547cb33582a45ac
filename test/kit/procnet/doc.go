// Package procnet reads, from /proc, the TCP addresses a process listens
// on, so that tests can check what a real process exposes (loopback only by
// default, the configured endpoint) without trusting its own report.
//
// It owns the decoding of /proc/PID/fd socket links and of the kernel's
// /proc/PID/net/tcp and tcp6 tables; it must not start, signal or
// otherwise touch the process it reads.
package procnet
