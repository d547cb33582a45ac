// Package poll waits in tests for a condition that a real peer reaches in
// its own time (a socket appears, kubelet sees capacity, a file is
// removed), failing the test with the condition's last error if it is not
// reached in time. Wait returns that error instead, for goroutines other
// than the test's, and stops when its context ends.
//
// The timeout is a failure deadline, never an asserted duration. The
// package owns only the waiting; what is checked belongs to the caller.
package poll
