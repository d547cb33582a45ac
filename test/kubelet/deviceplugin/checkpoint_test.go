package deviceplugin_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCorruptCheckpointIsSurvived(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(valid []byte) []byte
	}{
		{name: "garbage", corrupt: func([]byte) []byte { return []byte("\x00\xffnot a checkpoint") }},
		{name: "truncated", corrupt: func(valid []byte) []byte { return valid[:len(valid)/2] }},
		{name: "empty", corrupt: func([]byte) []byte { return nil }},
		{name: "one byte changed", corrupt: func(valid []byte) []byte {
			changed := bytes.Clone(valid)
			i := bytes.Index(changed, []byte("memif-0"))
			changed[i+len("memif-0")] = '9'
			return changed
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			a := n.startAgent(t, n.cfg)
			n.admitOne(t, "before")
			a.stop()
			valid, err := os.ReadFile(n.cfg.CheckpointPath)
			if err != nil {
				t.Fatal(err)
			}
			corrupt := tt.corrupt(valid)
			if err := os.WriteFile(n.cfg.CheckpointPath, corrupt, 0o600); err != nil {
				t.Fatal(err)
			}

			a = n.startAgent(t, n.cfg)
			aside, _ := filepath.Glob(n.cfg.CheckpointPath + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("corrupt checkpoints kept for the operator: %v, want one", aside)
			} else if kept, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(kept, corrupt) {
				t.Errorf("%s holds %q (%v), want the corrupt checkpoint as it was", aside[0], kept, err)
			}
			after := n.admitOne(t, "after")
			if len(after.memif.envs) != 2 {
				t.Errorf("a pod admitted after the corrupt checkpoint got envs %v, want its memif", keys(after.memif.envs))
			}
			if info, err := os.Stat(n.cfg.CheckpointPath); err != nil || info.Mode().Perm() != 0o600 {
				t.Errorf("new checkpoint: %v, mode %v; want it written with mode 0600", err, info.Mode())
			}
		})
	}
}
