package manager_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// An agent killed between making an allocation's directory and recording it
// in the checkpoint leaves a directory that no allocation holds and kubelet
// was never handed. The next start removes it when the checkpoint is whole,
// and keeps it when the checkpoint was lost (it may belong to a live pod).
func TestStartRemovesOrphanDirectories(t *testing.T) {
	cases := []struct {
		name        string
		checkpoint  string // "": the checkpoint the first agent wrote
		wantRemoved bool
	}{
		{name: "whole checkpoint", wantRemoved: true},
		{name: "corrupt checkpoint", checkpoint: `{"version":1,"data":`, wantRemoved: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			first := startAgent(t, cfg, nil)
			response, err := allocate(first, []string{"memif-000"})
			if err != nil {
				t.Fatal(err)
			}
			kept := response.ContainerResponses[0].Mounts[0].HostPath
			first.stop()
			if tc.checkpoint != "" {
				if err := os.WriteFile(cfg.CheckpointPath, []byte(tc.checkpoint), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			orphan := filepath.Join(cfg.SocketRoot, "memif-001-0badcafe")
			other := filepath.Join(cfg.SocketRoot, "vswitch-state")
			for _, dir := range []string{orphan, other} {
				if err := os.Mkdir(dir, 0o770); err != nil {
					t.Fatal(err)
				}
			}

			startAgent(t, cfg, nil)
			if _, err := os.Stat(orphan); errors.Is(err, os.ErrNotExist) != tc.wantRemoved {
				t.Errorf("orphan directory %s: stat = %v, want removed %v", orphan, err, tc.wantRemoved)
			}
			for _, dir := range []string{kept, other} {
				if _, err := os.Stat(dir); err != nil {
					t.Errorf("directory %s not left alone: %v", dir, err)
				}
			}
		})
	}
}
