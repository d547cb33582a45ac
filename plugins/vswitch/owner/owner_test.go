package owner_test

import (
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

func TestNameOfATag(t *testing.T) {
	for _, tc := range []struct {
		tag      string
		wantName string
		wantOurs bool
	}{
		{owner.Tag("memif_default_web_app_0"), "memif_default_web_app_0", true},
		{owner.Tag("pods"), "pods", true},
		{"memif_default_web_app_0", "", false},
		{"", "", false},
		{owner.Prefix, "", false},
		{"other-tool:pods", "", false},
		{"x" + owner.Tag("pods"), "", false},
	} {
		name, ours := owner.Name(tc.tag)
		if ours != tc.wantOurs || (ours && name != tc.wantName) {
			t.Errorf("Name(%q) = %q, %v; want %q, %v", tc.tag, name, ours, tc.wantName, tc.wantOurs)
		}
	}
	if longest := owner.Tag(strings.Repeat("a", owner.MaxNameLength)); len(longest) != 63 {
		t.Errorf("the tag of a name of MaxNameLength is %d bytes, want the 63 VPP holds", len(longest))
	}
}
