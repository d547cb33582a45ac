package unixgroup_test

import (
	"encoding/json"
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

func TestGroupValues(t *testing.T) {
	for _, tc := range []struct {
		name      string
		json      string
		want      unixgroup.Group
		wantCheck string // part of CheckSyntax's answer; "" for none
	}{
		{"empty", `""`, "", ""},
		{"name", `"memif-users"`, "memif-users", ""},
		{"quoted ID", `"1234"`, "1234", ""},
		{"bare ID", `1234`, "1234", ""},
		{"negative ID", `"-1"`, "-1", "non-negative"},
		{"fraction", `1.5`, "1.5", "group name or a numeric ID"},
		{"colon in name", `"a:b"`, "a:b", "group name or a numeric ID"},
		{"leading digit in name", `"1abc"`, "1abc", "group name or a numeric ID"},
		{"name too long", `"` + strings.Repeat("g", 33) + `"`, unixgroup.Group(strings.Repeat("g", 33)), "group name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got unixgroup.Group
			if err := json.Unmarshal([]byte(tc.json), &got); err != nil || got != tc.want {
				t.Fatalf("unmarshal %s = %q, %v; want %q", tc.json, got, err, tc.want)
			}
			check := got.CheckSyntax()
			if (tc.wantCheck == "") != (check == "") || !strings.Contains(check, tc.wantCheck) {
				t.Errorf("Group(%q).CheckSyntax() = %q, want %q", got, check, tc.wantCheck)
			}
		})
	}
}

func TestGroupRefusesOtherJSON(t *testing.T) {
	for _, value := range []string{`[1]`, `{"a": 1}`, `true`} {
		var got unixgroup.Group
		if err := json.Unmarshal([]byte(value), &got); err == nil || !strings.Contains(err.Error(), "group name or a numeric ID") {
			t.Errorf("unmarshal %s = %q, %v; want a refusal", value, got, err)
		}
	}
}
