package manager_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
	"github.com/contivpp/memif-agent/test/kit/fakepodtracker"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

func claimConfig(t testing.TB) config.Config {
	cfg := testConfig(t)
	cfg.ClaimDeviceCount = 4
	cfg.DevicePlugin = false
	return cfg
}

func startClaims(t testing.TB, cfg config.Config) *manager.Manager {
	t.Helper()
	dm, err := manager.New(cfg, manager.Options{Log: testlog.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	return dm
}

var claimPod = podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "dpdk"}, UID: "pod-uid-1"}

func TestPrepareClaimMakesBoundAllocationsAndUnprepareReleasesThem(t *testing.T) {
	cfg := claimConfig(t)
	dm := startClaims(t, cfg)
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, dm)
	if err := dm.Start(loop); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dm.Stop)

	event, err := devicemanagertest.PrepareClaim(t, loop, "claim-1", claimPod,
		dmapi.ClaimRequest{Name: "net", DeviceIDs: []string{"memif-dra-000", "memif-dra-001"}},
		dmapi.ClaimRequest{Name: "ctl", DeviceIDs: []string{"memif-dra-002"}})
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	if len(event.Prepared) != 2 || event.Prepared[0].Request != "ctl" || event.Prepared[1].Request != "net" || !event.Created {
		t.Fatalf("prepared %+v, want ctl and net, made now", event.Prepared)
	}
	for _, p := range event.Prepared {
		if info, err := os.Stat(p.Memif.HostDir); err != nil || !info.IsDir() {
			t.Errorf("directory of %s: %v, %v", p.Request, info, err)
		}
		if p.Memif.Secret == "" || p.Memif.ContainerSocket != filepath.Join(cfg.ContainerDir, cfg.SocketName) {
			t.Errorf("request %s got %v, want a secret and the container socket", p.Request, p.Memif)
		}
	}
	// The binding is known before any container runs.
	memifs, err := dm.GetPodMemifs(claimPod.ID)
	if err != nil || len(memifs) != 2 || memifs[0].PodUID != claimPod.UID {
		t.Errorf("GetPodMemifs = %v, %v; want both allocations bound to %s", memifs, err, claimPod)
	}
	persisted, err := checkpoint.Load(cfg.CheckpointPath)
	if err != nil || len(persisted.Allocations) != 2 || persisted.Allocations[0].ClaimUID != "claim-1" {
		t.Errorf("checkpoint = %+v, %v; want both allocations with their claim", persisted, err)
	}

	again, err := devicemanagertest.PrepareClaim(t, loop, "claim-1", claimPod,
		dmapi.ClaimRequest{Name: "net", DeviceIDs: []string{"memif-dra-000", "memif-dra-001"}},
		dmapi.ClaimRequest{Name: "ctl", DeviceIDs: []string{"memif-dra-002"}})
	if err != nil || again.Created || fmt.Sprint(again.Prepared) != fmt.Sprint(event.Prepared) {
		t.Errorf("preparing again = %+v (made now: %v), %v; want the same allocations", again.Prepared, again.Created, err)
	}

	if err := devicemanagertest.UnprepareClaim(t, loop, "claim-1"); err != nil {
		t.Fatalf("unprepare: %v", err)
	}
	// The release removes an allocation from the state, then its
	// directory, in one event: wait for both.
	poll.Until(t, waitLimit, "claim-1's allocations and directories released", func() error {
		if list := dm.ListAllocations(); len(list) != 0 {
			return fmt.Errorf("still held: %v", list)
		}
		for _, p := range event.Prepared {
			if _, err := os.Stat(p.Memif.HostDir); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("directory %s after unprepare: %v, want it gone", p.Memif.HostDir, err)
			}
		}
		return nil
	})
	if err := devicemanagertest.UnprepareClaim(t, loop, "claim-1"); err != nil {
		t.Errorf("unprepare of a released claim: %v, want no error", err)
	}
	if _, err := devicemanagertest.PrepareClaim(t, loop, "claim-2", claimPod,
		dmapi.ClaimRequest{Name: "net", DeviceIDs: []string{"memif-dra-000"}}); err != nil {
		t.Errorf("a released device prepared for another claim: %v", err)
	}
}

func TestPrepareClaimRefusalLeavesNothing(t *testing.T) {
	cases := []struct {
		name     string
		requests []dmapi.ClaimRequest
		want     error
	}{
		{"device plugin device", []dmapi.ClaimRequest{{Name: "a", DeviceIDs: []string{"memif-000"}}}, dmapi.ErrInvalidRequest},
		{"unknown device", []dmapi.ClaimRequest{{Name: "a", DeviceIDs: []string{"memif-dra-999"}}}, dmapi.ErrInvalidRequest},
		{"second request holds a held device", []dmapi.ClaimRequest{
			{Name: "a", DeviceIDs: []string{"memif-dra-001"}}, {Name: "b", DeviceIDs: []string{"memif-dra-003"}},
		}, dmapi.ErrDeviceInUse},
		{"no devices", []dmapi.ClaimRequest{{Name: "a"}}, dmapi.ErrInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := claimConfig(t)
			dm := startClaims(t, cfg)
			loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, dm)
			other := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "other"}, UID: "pod-uid-2"}
			held, err := devicemanagertest.PrepareClaim(t, loop, "held", other, dmapi.ClaimRequest{Name: "x", DeviceIDs: []string{"memif-dra-003"}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = devicemanagertest.PrepareClaim(t, loop, "refused", claimPod, tc.requests...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("prepare = %v, want %v", err, tc.want)
			}
			list := dm.ListAllocations()
			if len(list) != 1 || list[0].AllocationID != held.Prepared[0].Memif.AllocationID {
				t.Errorf("after the refusal the manager holds %v, want only the earlier claim's", list)
			}
			entries, _ := os.ReadDir(cfg.SocketRoot)
			if len(entries) != 1 {
				t.Errorf("socket root holds %d directories, want 1", len(entries))
			}
		})
	}
}

func TestPreparedClaimSurvivesRestartAndCollection(t *testing.T) {
	cfg := claimConfig(t)
	tracker := fakepodtracker.New(true) // no pod alive at all
	first, err := manager.New(cfg, manager.Options{Log: testlog.New(t), LivePods: tracker})
	if err != nil {
		t.Fatal(err)
	}
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, first)
	tracker.Attach(loop)
	event, err := devicemanagertest.PrepareClaim(t, loop, "claim-1", claimPod, dmapi.ClaimRequest{Name: "net", DeviceIDs: []string{"memif-dra-000"}})
	if err != nil {
		t.Fatal(err)
	}
	loop.Close()

	second, err := manager.New(cfg, manager.Options{Log: testlog.New(t), LivePods: tracker})
	if err != nil {
		t.Fatal(err)
	}
	loop = devicemanagertest.StartLoop(t, fakevswitch.Committer{}, second)
	tracker.Attach(loop)
	// The startup resync restores the checkpoint and asks for the tracker's
	// decision, on which what no live pod holds is collected; a claim's
	// allocations are kubelet's to release.
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := loop.Resync(ctx); err != nil { // runs after the decision
		t.Fatal(err)
	}
	info, err := second.GetPodMemifInfo(claimPod.ID)
	if err != nil || info.AllocationID != event.Prepared[0].Memif.AllocationID || info.Secret != event.Prepared[0].Memif.Secret {
		t.Fatalf("after restart and a resync with no pod alive GetPodMemifInfo = %v, %v; want the claim's allocation", info, err)
	}
	again, err := devicemanagertest.PrepareClaim(t, loop, "claim-1", claimPod, dmapi.ClaimRequest{Name: "net", DeviceIDs: []string{"memif-dra-000"}})
	if err != nil || again.Created || again.Prepared[0].Memif.Secret != event.Prepared[0].Memif.Secret {
		t.Errorf("kubelet's prepare after the restart = %+v, %v; want the same allocation", again.Prepared, err)
	}
}

// TestPreparedClaimsWaitForTheCheckpoint: the DRA driver asks which claims
// the node holds as it starts, which may be before the startup resync has
// restored the checkpoint. An answer then would be "none", and the claims'
// sync built on it released every claim of the node, pods running (seen
// when the agent's pod was replaced). The answer waits for the restore.
func TestPreparedClaimsWaitForTheCheckpoint(t *testing.T) {
	cfg := claimConfig(t)
	first := startClaims(t, cfg)
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, first)
	event := dmapi.NewPrepareClaim("claim-1", "ns", "dpdk-memif", claimPod, []dmapi.ClaimRequest{{Name: "net", DeviceIDs: []string{"memif-dra-000"}}})
	if err := loop.PushEvent(event); err != nil {
		t.Fatal(err)
	}
	if err := event.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	loop.Close()

	second := startClaims(t, cfg)
	answered := make(chan []dmapi.ClaimRef, 1)
	go func() {
		refs, err := second.PreparedClaims(t.Context())
		if err != nil {
			t.Error(err)
		}
		answered <- refs
	}()
	devicemanagertest.StartLoop(t, fakevswitch.Committer{}, second)
	want := []dmapi.ClaimRef{{UID: "claim-1", Namespace: "ns", Name: "dpdk-memif"}}
	if refs := <-answered; !slices.Equal(refs, want) {
		t.Errorf("PreparedClaims of the restarted manager = %+v, want %+v", refs, want)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := startClaims(t, cfg).PreparedClaims(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("PreparedClaims of a manager whose startup resync never comes, its context ended = %v, want context.Canceled", err)
	}
}

// TestSyncClaimsAfterRestart: the agent restarts from the checkpoint, the
// DRA driver lists the claims; what was deleted or unreserved meanwhile is
// released, a binding the checkpoint lacks is learned from the claim's
// reservation, and a claim prepared after the list is left alone.
func TestSyncClaimsAfterRestart(t *testing.T) {
	otherPod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "shared-user"}, UID: "pod-uid-3"}
	newPod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "new"}, UID: "pod-uid-4"}
	cases := []struct {
		name         string
		uid, device  string
		preparedFor  podapi.Pod
		afterList    bool
		listed       *dmapi.ClaimStatus
		wantReleased bool
		wantBoundTo  podapi.Pod
	}{
		{name: "deleted while the agent was down", uid: "claim-gone", device: "memif-dra-000", preparedFor: claimPod, wantReleased: true},
		{name: "reserved for no pod any more", uid: "claim-unreserved", device: "memif-dra-001",
			preparedFor: podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "done"}, UID: "pod-uid-2"}, listed: &dmapi.ClaimStatus{}, wantReleased: true},
		{name: "binding learned from the reservation", uid: "claim-unbound", device: "memif-dra-002",
			listed: &dmapi.ClaimStatus{Reserved: true, Pod: otherPod}, wantBoundTo: otherPod},
		{name: "prepared after the list", uid: "claim-new", device: "memif-dra-003", preparedFor: newPod, afterList: true, wantBoundTo: newPod},
	}
	cfg := claimConfig(t)
	first := startClaims(t, cfg)
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, first)
	dirs := map[string]string{}
	listed := map[string]dmapi.ClaimStatus{}
	var listedAt time.Time
	for _, tc := range cases {
		if tc.afterList && listedAt.IsZero() {
			listedAt = time.Now()
		}
		event, err := devicemanagertest.PrepareClaim(t, loop, tc.uid, tc.preparedFor, dmapi.ClaimRequest{Name: "net", DeviceIDs: []string{tc.device}})
		if err != nil {
			t.Fatalf("prepare %s: %v", tc.uid, err)
		}
		dirs[tc.uid] = event.Prepared[0].Memif.HostDir
		if tc.listed != nil {
			listed[tc.uid] = *tc.listed
		}
	}
	loop.Close()

	second := startClaims(t, cfg)
	loop = devicemanagertest.StartLoop(t, fakevswitch.Committer{}, second)
	devicemanagertest.WaitForHistory(t, loop, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	released, err := second.ClaimPreparer(loop).Sync(ctx, listed, listedAt)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	var wantReleased []string
	for _, tc := range cases {
		if tc.wantReleased {
			wantReleased = append(wantReleased, tc.uid)
		}
	}
	slices.Sort(wantReleased)
	if !slices.Equal(released, wantReleased) {
		t.Errorf("released %v, want %v", released, wantReleased)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantReleased {
				poll.Until(t, 20*time.Second, tc.uid+" released", func() error {
					if _, err := os.Stat(dirs[tc.uid]); !errors.Is(err, os.ErrNotExist) {
						return fmt.Errorf("%s: %v", dirs[tc.uid], err)
					}
					for _, memif := range second.ListAllocations() {
						if memif.HostDir == dirs[tc.uid] {
							return fmt.Errorf("still held: %v", memif)
						}
					}
					return nil
				})
				return
			}
			memif, err := second.GetPodMemifInfo(tc.wantBoundTo.ID)
			if err != nil || memif.HostDir != dirs[tc.uid] || memif.PodUID != tc.wantBoundTo.UID {
				t.Errorf("GetPodMemifInfo(%s) = %v, %v; want %s's allocation bound to uid %s", tc.wantBoundTo.ID, memif, err, tc.uid, tc.wantBoundTo.UID)
			}
		})
	}
	third := startClaims(t, cfg)
	loop.Close()
	loop = devicemanagertest.StartLoop(t, fakevswitch.Committer{}, third)
	devicemanagertest.WaitForHistory(t, loop, 1)
	if memif, err := third.GetPodMemifInfo(otherPod.ID); err != nil || memif.HostDir != dirs["claim-unbound"] {
		t.Errorf("after another restart GetPodMemifInfo(%s) = %v, %v; want the learned binding from the checkpoint", otherPod.ID, memif, err)
	}
}

// TestClaimPreparerAnswersWhatTheLoopDid: each call of the device manager
// as the DRA driver's ClaimPreparer is answered once the event loop
// processed it, with what its event made, and a call the loop refuses to
// queue fails saying so.
func TestClaimPreparerAnswersWhatTheLoopDid(t *testing.T) {
	dm := startClaims(t, claimConfig(t))
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, dm)
	claims := dm.ClaimPreparer(loop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	claim := dmapi.ClaimRef{UID: "claim-1", Namespace: "ns", Name: "memif"}
	net := dmapi.ClaimRequest{Name: "net", DeviceIDs: []string{"memif-dra-000"}}
	var first []dmapi.PreparedRequest
	steps := []struct {
		name string
		call func() error
		want func(error) error
	}{
		{"prepare", func() (err error) {
			first, err = claims.Prepare(ctx, claim, claimPod, []dmapi.ClaimRequest{net})
			return err
		}, func(err error) error {
			if err != nil || len(first) != 1 || first[0].Request != "net" || first[0].Memif.Pod != claimPod.ID {
				return fmt.Errorf("prepared %+v, %v; want request net bound to %s", first, err, claimPod)
			}
			return nil
		}},
		{"prepare again", func() error {
			again, err := claims.Prepare(ctx, claim, claimPod, []dmapi.ClaimRequest{net})
			if fmt.Sprint(again) != fmt.Sprint(first) {
				return fmt.Errorf("prepared %+v again, want %+v", again, first)
			}
			return err
		}, wantNil},
		{"device held", func() error {
			_, err := claims.Prepare(ctx, dmapi.ClaimRef{UID: "claim-2", Namespace: "ns", Name: "other"}, claimPod, []dmapi.ClaimRequest{net})
			return err
		}, wantIs(dmapi.ErrDeviceInUse)},
		{"unprepare", func() error { return claims.Unprepare(ctx, claim) }, wantNil},
		{"unprepare a claim holding none", func() error {
			return claims.Unprepare(ctx, dmapi.ClaimRef{UID: "never", Namespace: "ns", Name: "never"})
		}, wantNil},
	}
	for _, step := range steps {
		if err := step.want(step.call()); err != nil {
			t.Errorf("%s: %v", step.name, err)
		}
	}
	poll.Until(t, 20*time.Second, "the unprepared claim released", func() error {
		if list := dm.ListAllocations(); len(list) != 0 {
			return fmt.Errorf("still held: %v", list)
		}
		return nil
	})
	loop.Close()
	if _, err := claims.Prepare(ctx, claim, claimPod, []dmapi.ClaimRequest{net}); err == nil || !strings.Contains(err.Error(), "queue the claim for preparation") {
		t.Errorf("prepare on a closed loop = %v, want it refused at the queue", err)
	}
}

func wantNil(err error) error {
	if err != nil {
		return fmt.Errorf("got %w, want no error", err)
	}
	return nil
}

func wantIs(target error) func(error) error {
	return func(err error) error {
		if !errors.Is(err, target) {
			return fmt.Errorf("got %v, want %v", err, target)
		}
		return nil
	}
}
