package unixgroup_test

import (
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/unixgroup"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		group   string
		wantGID int
		wantErr string // part of the error; "" for none
	}{
		{"no group", "", unixgroup.None, ""},
		{"number", "4321", 4321, ""},
		{"root by name", "root", 0, ""},
		{"nogroup by name", "nogroup", 65534, ""},
		{"negative number is a name", "-5", 0, `group "-5" not found`},
		{"unknown name", "no-such-group-here", 0, `group "no-such-group-here" not found on this host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gid, err := unixgroup.Lookup(tc.group)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Lookup(%q) = %d, %v; want an error containing %q", tc.group, gid, err, tc.wantErr)
				}
				return
			}
			if err != nil || gid != tc.wantGID {
				t.Errorf("Lookup(%q) = %d, %v; want %d", tc.group, gid, err, tc.wantGID)
			}
		})
	}
}
