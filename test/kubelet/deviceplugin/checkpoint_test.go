package deviceplugin_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
)

// checkpointFiles is what the agent left on disk after the setup of
// TestCorruptCheckpointIsSurvived: a snapshot holding pod a (written by the
// compaction of the second start) and a journal with one record for pod b,
// then one for pod c.
type checkpointFiles struct {
	snapshot, journal []byte
	a, b, c           admitted
}

// flipDigitOf changes one byte of content: the last digit of the first
// device ID of pod p, so that the JSON stays valid and only a checksum can
// tell.
func flipDigitOf(t *testing.T, content []byte, p admitted) []byte {
	t.Helper()
	id := []byte(p.devices[0])
	i := bytes.Index(content, id)
	if i < 0 {
		t.Fatalf("setup: %s of pod %s is not in the file to corrupt", id, p.pod.Name)
	}
	changed := bytes.Clone(content)
	last := i + len(id) - 1
	changed[last] = '0' + (changed[last]-'0'+1)%10
	return changed
}

func TestCorruptCheckpointIsSurvived(t *testing.T) {
	const kept, lost = true, false
	tests := []struct {
		name string
		// corrupt returns the new snapshot and journal; nil removes the file.
		corrupt func(t *testing.T, f checkpointFiles) (snapshot, journal []byte)
		// wantProblem is part of what checkpoint.Load says of the damage:
		// the case must damage what its name says.
		wantProblem string
		// wantKept says, for pods a, b and c, whether the agent still holds
		// each with the secret it had.
		wantKept [3]bool
		// wantAside: the damaged files are moved aside for the operator.
		wantAside bool
		// wantLostParts is the count of lost parts the agent reports.
		wantLostParts float64
	}{
		{
			name: "snapshot garbage",
			corrupt: func(_ *testing.T, f checkpointFiles) ([]byte, []byte) {
				return []byte("\x00\xffnot a checkpoint"), f.journal
			},
			wantProblem: "not a memif-agent checkpoint", wantKept: [3]bool{lost, kept, kept}, wantAside: true, wantLostParts: 1,
		},
		{
			name: "snapshot truncated",
			corrupt: func(_ *testing.T, f checkpointFiles) ([]byte, []byte) {
				return f.snapshot[:len(f.snapshot)/2], f.journal
			},
			wantProblem: "truncated or foreign", wantKept: [3]bool{lost, kept, kept}, wantAside: true, wantLostParts: 1,
		},
		{
			name:        "snapshot empty",
			corrupt:     func(_ *testing.T, f checkpointFiles) ([]byte, []byte) { return []byte{}, f.journal },
			wantProblem: "the file is empty", wantKept: [3]bool{lost, kept, kept}, wantAside: true, wantLostParts: 1,
		},
		{
			name: "snapshot data one byte changed",
			corrupt: func(t *testing.T, f checkpointFiles) ([]byte, []byte) {
				return flipDigitOf(t, f.snapshot, f.a), f.journal
			},
			wantProblem: "checksum mismatch", wantKept: [3]bool{lost, kept, kept}, wantAside: true, wantLostParts: 1,
		},
		{
			name: "journal header one byte changed",
			corrupt: func(_ *testing.T, f checkpointFiles) ([]byte, []byte) {
				journal := bytes.Clone(f.journal)
				journal[0] ^= 0x20
				return f.snapshot, journal
			},
			wantProblem: "not a memif-agent checkpoint journal", wantKept: [3]bool{kept, lost, lost}, wantAside: true, wantLostParts: 1,
		},
		{
			name: "journal record one byte changed, a record after it",
			corrupt: func(t *testing.T, f checkpointFiles) ([]byte, []byte) {
				return f.snapshot, flipDigitOf(t, f.journal, f.b)
			},
			wantProblem: "skipped", wantKept: [3]bool{kept, lost, kept}, wantAside: true, wantLostParts: 1,
		},
		{
			name: "journal last record torn",
			corrupt: func(_ *testing.T, f checkpointFiles) ([]byte, []byte) {
				return f.snapshot, f.journal[:len(f.journal)-5]
			},
			// A crash in the middle of an append: not damage to keep aside.
			wantProblem: "torn record", wantKept: [3]bool{kept, kept, lost}, wantAside: false, wantLostParts: 1,
		},
		{
			name:        "journal missing",
			corrupt:     func(_ *testing.T, f checkpointFiles) ([]byte, []byte) { return f.snapshot, nil },
			wantProblem: "the changes saved after the snapshot are lost", wantKept: [3]bool{kept, lost, lost}, wantAside: true,
			// The snapshot (version 3) says its journal was made before
			// it: the journal was there, and its loss counts.
			wantLostParts: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			journalPath := n.cfg.CheckpointPath + ".journal"
			agent := n.startAgent(t, n.cfg)
			f := checkpointFiles{a: n.admitOne(t, "a")}
			n.stopAgent(t, agent)
			agent = n.startAgent(t, n.cfg)
			f.b = n.admitOne(t, "b")
			f.c = n.admitOne(t, "c")
			n.stopAgent(t, agent)
			var err error
			if f.snapshot, err = os.ReadFile(n.cfg.CheckpointPath); err != nil {
				t.Fatal(err)
			}
			if f.journal, err = os.ReadFile(journalPath); err != nil {
				t.Fatal(err)
			}
			for _, p := range []admitted{f.a, f.b, f.c} {
				id := []byte(p.devices[0])
				inSnapshot, inJournal := bytes.Contains(f.snapshot, id), bytes.Contains(f.journal, id)
				if wantSnapshot := p.pod.Name == "a"; inSnapshot != wantSnapshot || inJournal == wantSnapshot {
					t.Fatalf("setup: %s of pod %s in the snapshot: %v, in the journal: %v; want pod a in the snapshot only, b and c in the journal only",
						id, p.pod.Name, inSnapshot, inJournal)
				}
			}

			snapshot, journal := tc.corrupt(t, f)
			writeOrRemove(t, n.cfg.CheckpointPath, snapshot)
			writeOrRemove(t, journalPath, journal)
			if _, err := checkpoint.Load(n.cfg.CheckpointPath); err == nil || !strings.Contains(err.Error(), tc.wantProblem) {
				t.Fatalf("the corrupted checkpoint loads with %v; want an error saying %q", err, tc.wantProblem)
			}

			agent = n.startAgent(t, n.cfg)
			held := map[string]string{}
			for _, info := range agent.DeviceManager.ListAllocations() {
				held[info.HostDir] = info.Secret
			}
			for i, p := range []admitted{f.a, f.b, f.c} {
				secret, ok := held[p.memif.mounts[n.cfg.ContainerDir]]
				if isKept := ok && secret == p.memif.envs[dmapi.EnvMemifSecret]; isKept != tc.wantKept[i] {
					t.Errorf("the agent holds pod %s's allocation with its secret: %v, want %v", p.pod.Name, isKept, tc.wantKept[i])
				}
			}
			if lostParts := counterValue(t, agent.Metrics, "memif_device_manager_checkpoint_lost_parts_total", ""); lostParts != tc.wantLostParts {
				t.Errorf("lost checkpoint parts counted: %v, want %v", lostParts, tc.wantLostParts)
			}
			checkAside(t, n.cfg.CheckpointPath, snapshot, tc.wantAside)
			checkAside(t, journalPath, journal, tc.wantAside && journal != nil)

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

// writeOrRemove writes content to path, or removes path when content is nil.
func writeOrRemove(t *testing.T, path string, content []byte) {
	t.Helper()
	if content == nil {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkAside checks that path was moved aside as "<path>.corrupt-*" holding
// content as it was, when want, and that nothing was moved aside otherwise.
func checkAside(t *testing.T, path string, content []byte, want bool) {
	t.Helper()
	aside, _ := filepath.Glob(path + ".corrupt-*")
	switch {
	case !want && len(aside) != 0:
		t.Errorf("%s moved aside to %v; want it kept in place", path, aside)
	case want && len(aside) != 1:
		t.Errorf("%s moved aside to %v; want one copy kept for the operator", path, aside)
	case want:
		if kept, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(kept, content) {
			t.Errorf("%s holds %q (%v), want the damaged file as it was", aside[0], kept, err)
		}
	}
}
