package assign_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/contivpp/memif-agent/plugins/networks/assign"
	"github.com/contivpp/memif-agent/plugins/networks/ipam"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// The state file's format as the previous version reads it (its State,
// Record and Refusal, before origins were kept), decoded as it decodes
// it: strictly, version 1. An agent rolled back to it must read what this
// one writes.

const previousStateVersion = 1

type previousState struct {
	Version     int                       `json:"version"`
	Applied     netconf.Config            `json:"applied"`
	Allocations map[string]previousRecord `json:"allocations"`
	Addresses   ipam.State                `json:"addresses"`
}

type previousRecord struct {
	Pod     string           `json:"pod"`
	Specs   []memifspec.Spec `json:"specs"`
	Refused *previousRefusal `json:"refused,omitempty"`
}

type previousRefusal struct {
	Reason  memifspec.Reason `json:"reason"`
	Message string           `json:"message"`
}

func readAsThePreviousVersion(t *testing.T, path string) previousState {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decoder := json.NewDecoder(bytes.NewReader(content))
	decoder.DisallowUnknownFields()
	var state previousState
	if err := decoder.Decode(&state); err != nil {
		t.Fatalf("the previous version refuses %s: %v", path, err)
	}
	if state.Version != previousStateVersion {
		t.Fatalf("%s has version %d, the previous version reads %d", path, state.Version, previousStateVersion)
	}
	return state
}

// TestStateReadableByThePreviousVersion: the state file this version
// writes, with memifs of every origin, a refused record and leases, is
// read by the previous version as the same records, networks and leases;
// the origins are in the origins file beside it, and back after a restart.
func TestStateReadableByThePreviousVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   start
		want assign.Origin // the origin of a memif whose pod names none
	}{
		{"l2-xconnect", crossConnected, assign.OriginWiring},
		{"memifwiring.conf's bridge-domain", bridged, assign.OriginWiring},
		{"networks.conf's default-network", labByDefault, assign.OriginDefaultNetwork},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "networks.json")
			a, _ := startAgent(t, path, tc.at)
			a.Record("unnamed", "default/u", "app", 1, "")
			a.Record("named", "default/n", "app", 2, `[{"network": "red", "memif-id": 1}]`)
			a.Record("refused", "default/r", "app", 1, `not json`)
			a.RecordClaim("claim", "default/c", 1, nil)
			for _, id := range []string{"unnamed", "named", "refused", "claim"} {
				a.Resolve(id)
			}
			if err := a.Save(); err != nil {
				t.Fatal(err)
			}

			previous, err := json.Marshal(readAsThePreviousVersion(t, path))
			if err != nil {
				t.Fatal(err)
			}
			written, err := json.Marshal(a.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(previous, written) {
				t.Errorf("the previous version reads\n%s\nwant\n%s", previous, written)
			}

			if info, err := os.Stat(filepath.Join(dir, "networks-origins.json")); err != nil || info.Mode().Perm() != 0o600 {
				t.Fatalf("origins file: %v, mode %v, want 0600", err, info.Mode().Perm())
			}
			restarted, _ := startAgent(t, path, tc.at)
			origins := restarted.Snapshot().Allocations
			for id, want := range map[string][]assign.Origin{
				"unnamed": {tc.want},
				"named":   {tc.want, assign.OriginNamed},
				"claim":   {tc.want},
			} {
				if got := origins[id].Origins; !slices.Equal(got, want) {
					t.Errorf("after a restart %s's origins are %v, want %v", id, got, want)
				}
			}
		})
	}
}
