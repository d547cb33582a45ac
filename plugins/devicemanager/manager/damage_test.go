package manager_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/fakepodtracker"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// journalHeaderSize and recordHeaderSize are the checkpoint journal's
// layout (checkpoint/journal.go): a header, then records of a length, a
// checksum and a payload.
const journalHeaderSize, recordHeaderSize = 20, 8

// grantSix makes six allocations, two before a restart (the restart's
// first save puts them in the snapshot) and four after (one journal
// record each), and returns their directories in order and the offset
// where each journal record starts, the journal's length last.
func grantSix(t *testing.T, cfg config.Config) (dirs []string, starts []int) {
	t.Helper()
	for round, devices := range [][]string{{"memif-000", "memif-001"}, {"memif-002", "memif-003", "memif-004", "memif-005"}} {
		a := startAgent(t, cfg, nil)
		if round == 1 {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			if err := a.loop.Resync(ctx); err != nil { // the startup resync, and its compaction, are done
				t.Fatal(err)
			}
		}
		for _, device := range devices {
			response, err := allocate(a, []string{device})
			if err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, response.ContainerResponses[0].Mounts[0].HostPath)
		}
		a.stop()
	}
	journal, err := os.ReadFile(cfg.CheckpointPath + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	starts = []int{journalHeaderSize}
	for offset := journalHeaderSize; offset+recordHeaderSize <= len(journal); {
		offset += recordHeaderSize + int(binary.BigEndian.Uint32(journal[offset:]))
		starts = append(starts, offset)
	}
	if len(starts) != 5 || starts[4] != len(journal) {
		t.Fatalf("journal records start at %v of %d bytes, want four records", starts, len(journal))
	}
	return dirs, starts
}

// TestCheckpointDamage restarts the agent on a checkpoint damaged every
// way: cut at every journal record boundary and in every record, a byte
// changed in every record, the snapshot or journal deleted or emptied.
// Every granted allocation's directory stays (kubelet shows a pod holding
// each device), and the allocations restored are exactly those whose
// records the damage did not touch.
func TestCheckpointDamage(t *testing.T) {
	type damage struct {
		name string
		do   func(t *testing.T, cfg config.Config, starts []int)
		keep []int // indexes of the allocations restored
	}
	journalOf := func(cfg config.Config) string { return cfg.CheckpointPath + ".journal" }
	rewrite := func(t *testing.T, path string, change func([]byte) []byte) {
		t.Helper()
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, change(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	upTo := func(n int) []int {
		keep := make([]int, n)
		for i := range keep {
			keep[i] = i
		}
		return keep
	}
	var cases []damage
	for record := range 4 {
		cases = append(cases,
			damage{fmt.Sprintf("cut before record %d", record+1), func(t *testing.T, cfg config.Config, starts []int) {
				rewrite(t, journalOf(cfg), func(b []byte) []byte { return b[:starts[record]] })
			}, upTo(2 + record)},
			damage{fmt.Sprintf("cut in record %d", record+1), func(t *testing.T, cfg config.Config, starts []int) {
				rewrite(t, journalOf(cfg), func(b []byte) []byte { return b[:starts[record+1]-7] })
			}, upTo(2 + record)},
			damage{fmt.Sprintf("byte changed in record %d", record+1), func(t *testing.T, cfg config.Config, starts []int) {
				rewrite(t, journalOf(cfg), func(b []byte) []byte {
					b = bytes.Clone(b)
					b[starts[record]+recordHeaderSize+5] ^= 0x20
					return b
				})
			}, slices.DeleteFunc(upTo(6), func(i int) bool { return i == 2+record })})
	}
	remove := func(path func(config.Config) string) func(*testing.T, config.Config, []int) {
		return func(t *testing.T, cfg config.Config, _ []int) {
			if err := os.Remove(path(cfg)); err != nil {
				t.Fatal(err)
			}
		}
	}
	empty := func(path func(config.Config) string) func(*testing.T, config.Config, []int) {
		return func(t *testing.T, cfg config.Config, _ []int) {
			rewrite(t, path(cfg), func([]byte) []byte { return nil })
		}
	}
	snapshotOf := func(cfg config.Config) string { return cfg.CheckpointPath }
	cases = append(cases,
		damage{"snapshot deleted", remove(snapshotOf), []int{2, 3, 4, 5}},
		damage{"snapshot emptied", empty(snapshotOf), []int{2, 3, 4, 5}},
		damage{"journal deleted", remove(journalOf), upTo(2)},
		damage{"journal emptied", empty(journalOf), upTo(2)},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			dirs, starts := grantSix(t, cfg)
			tc.do(t, cfg, starts)

			var holders []podapi.PodState
			for i := range dirs {
				holders = append(holders, podapi.PodState{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: fmt.Sprint("p", i)}, UID: fmt.Sprint("u", i)},
					Containers: []podapi.PodContainer{{Name: "c", DeviceIDs: map[string][]string{cfg.ResourceName: {fmt.Sprintf("memif-%03d", i)}}}}})
			}
			restarted := startAgent(t, cfg, fakepodtracker.New(true, holders...))
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			if err := restarted.loop.Resync(ctx); err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, a := range restarted.dm.ListAllocations() {
				got = append(got, a.HostDir)
			}
			for _, i := range tc.keep {
				want = append(want, dirs[i])
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("restored %v, want %v", got, want)
			}
			for _, dir := range dirs {
				if _, err := os.Stat(dir); err != nil {
					t.Errorf("directory %s of a granted allocation: %v", dir, err)
				}
			}
		})
	}
}

// TestCheckpointLossIsCounted: every part of the checkpoint lost to damage
// is counted in memif_device_manager_checkpoint_lost_parts_total.
func TestCheckpointLossIsCounted(t *testing.T) {
	cases := []struct {
		name string
		// damage returns the journal's new content; nil deletes it.
		damage func(journal []byte, starts []int) []byte
		want   float64
	}{
		{"whole", func(journal []byte, _ []int) []byte { return journal }, 0},
		{"one record changed", func(journal []byte, starts []int) []byte {
			journal[starts[1]+recordHeaderSize+5] ^= 0x20
			return journal
		}, 1},
		{"two records changed", func(journal []byte, starts []int) []byte {
			journal[starts[0]+recordHeaderSize+5] ^= 0x20
			journal[starts[2]+recordHeaderSize+5] ^= 0x20
			return journal
		}, 2},
		{"last record torn", func(journal []byte, starts []int) []byte { return journal[:starts[4]-3] }, 1},
		{"journal deleted", func([]byte, []int) []byte { return nil }, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			_, starts := grantSix(t, cfg)
			journal, err := os.ReadFile(cfg.CheckpointPath + ".journal")
			if err != nil {
				t.Fatal(err)
			}
			if damaged := tc.damage(journal, starts); damaged == nil {
				err = os.Remove(cfg.CheckpointPath + ".journal")
			} else {
				err = os.WriteFile(cfg.CheckpointPath+".journal", damaged, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			registry := prometheus.NewRegistry()
			dm, err := manager.New(cfg, manager.Options{Log: testlog.New(t), Metrics: registry})
			if err != nil {
				t.Fatal(err)
			}
			loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{Handlers: []controllerapi.EventHandler{dm}, Committer: fakevswitch.Committer{}})
			if err != nil {
				t.Fatal(err)
			}
			loop.Start()
			defer loop.Close()
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			if err := loop.Resync(ctx); err != nil {
				t.Fatal(err)
			}
			families, err := registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			value := -1.0
			for _, family := range families {
				if family.GetName() == "memif_device_manager_checkpoint_lost_parts_total" {
					value = family.GetMetric()[0].GetCounter().GetValue()
				}
			}
			if value != tc.want {
				t.Errorf("lost parts counted = %v, want %v", value, tc.want)
			}
		})
	}
}
