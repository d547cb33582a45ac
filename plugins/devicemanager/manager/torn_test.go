package manager_test

import (
	"context"
	"os"
	"testing"
)

// TestTornJournalTail: the agent died while appending an allocation to the
// checkpoint journal (its Allocate never returned). The restart keeps every
// allocation before it, frees the torn one's device, and keeps its
// directory: a torn record cannot be told from a damaged one, so the
// checkpoint may not be the whole record and no directory is an orphan.
func TestTornJournalTail(t *testing.T) {
	cfg := testConfig(t)
	first := startAgent(t, cfg, nil)
	kept, err := allocate(first, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	cut, err := allocate(first, []string{"memif-001"})
	if err != nil {
		t.Fatal(err)
	}
	first.stop()
	journal := cfg.CheckpointPath + ".journal"
	info, err := os.Stat(journal)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(journal, info.Size()-5); err != nil {
		t.Fatal(err)
	}

	second := startAgent(t, cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := second.loop.Resync(ctx); err != nil { // the startup resync is done too
		t.Fatal(err)
	}
	list := second.dm.ListAllocations()
	if len(list) != 1 || list[0].HostDir != kept.ContainerResponses[0].Mounts[0].HostPath {
		t.Fatalf("after a torn journal tail the manager holds %v, want only the allocation before it", list)
	}
	if _, err := os.Stat(cut.ContainerResponses[0].Mounts[0].HostPath); err != nil {
		t.Errorf("directory of the torn allocation: %v, want it kept", err)
	}
	if _, err := allocate(second, []string{"memif-001"}); err != nil {
		t.Errorf("allocating the torn allocation's device again: %v", err)
	}
}
