package needs

import (
	"fmt"
	"os"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where nothing a
// test needs may be missing.
func InCI() bool {
	return os.Getenv("CI") == "true"
}

// Root fails tb under CI, and skips it elsewhere, unless the test runs as
// root. why says what the test does that needs root.
func Root(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Unavailable(tb, "%s needs root (running as uid %d)", why, os.Geteuid())
	}
}

// Unavailable fails tb under CI and skips it elsewhere, saying what is
// missing.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		tb.Fatalf("CI=true and this test cannot run: %s", msg)
	}
	tb.Skipf("skipping: %s", msg)
}
