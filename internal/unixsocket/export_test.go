package unixsocket

import "testing"

// SetBeforeConnect makes Dial call f between its first look at the path
// and its connection, until the test ends.
func SetBeforeConnect(t testing.TB, f func()) {
	beforeConnect = f
	t.Cleanup(func() { beforeConnect = func() {} })
}
