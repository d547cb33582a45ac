// Package needs decides what a test does when this machine lacks what it
// needs to run for real (root, a second user, a peer program): under
// CI=true it fails, because CI must run what it claims to; elsewhere it
// skips with the reason, so a developer without root can still run the
// rest.
package needs
