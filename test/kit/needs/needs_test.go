package needs_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/needs"
)

// childEnv makes the re-executed test binary run the one case it names.
const childEnv = "NEEDS_TEST_CHILD"

func TestUnavailable(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		needs.Unavailable(t, "no %s here", "peer")
		return
	}
	for _, tc := range []struct {
		name, ci string
		wantFail bool
		wantOut  string
	}{
		{"fails under CI", "true", true, "CI=true and this test cannot run: no peer here"},
		{"skips elsewhere", "", false, "skipping: no peer here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestUnavailable$", "-test.v")
			cmd.Env = append(os.Environ(), childEnv+"=1", "CI="+tc.ci)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.wantFail {
				t.Errorf("the test failed: %v, want %v; it printed:\n%s", failed, tc.wantFail, out)
			}
			if !strings.Contains(string(out), tc.wantOut) {
				t.Errorf("the test printed:\n%s\nwant it to say %q", out, tc.wantOut)
			}
		})
	}
}
