package manager_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceinfo"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// deviceInfoPath is the spec's path of device's file under cfg.
func deviceInfoPath(cfg config.Config, device string) string {
	return filepath.Join(cfg.DeviceInfoDir, deviceinfo.FileName(cfg.ResourceName, device))
}

// readDeviceInfo reads device's file, nil when there is none.
func readDeviceInfo(t *testing.T, cfg config.Config, device string) (*deviceinfo.DeviceInfo, []byte) {
	t.Helper()
	content, err := os.ReadFile(deviceInfoPath(cfg, device))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var info deviceinfo.DeviceInfo
	if err := json.Unmarshal(content, &info); err != nil || info.Memif == nil {
		t.Fatalf("device-info of %s: %v\n%s", device, err, content)
	}
	return &info, content
}

// wantDeviceInfo checks that each device has its file, of the memif
// the container got, in mode, and without the secret.
func wantDeviceInfo(t *testing.T, cfg config.Config, response *pluginapi.ContainerAllocateResponse, mode string, devices ...string) {
	t.Helper()
	for _, device := range devices {
		info, content := readDeviceInfo(t, cfg, device)
		if info == nil {
			t.Errorf("no device-info file for %s", device)
			continue
		}
		want := deviceinfo.NewMemif(response.Envs[dmapi.EnvMemifSocket], mode)
		if info.Type != want.Type || info.Version != want.Version || *info.Memif != *want.Memif {
			t.Errorf("device-info of %s = %+v %+v, want %+v %+v", device, *info, *info.Memif, want, *want.Memif)
		}
		if secret := response.Envs[dmapi.EnvMemifSecret]; secret == "" || strings.Contains(string(content), secret) {
			t.Errorf("device-info of %s holds the secret (or the answer has none): %s", device, content)
		}
	}
}

func wantNoDeviceInfo(t *testing.T, cfg config.Config, devices ...string) {
	t.Helper()
	for _, device := range devices {
		if _, err := os.Lstat(deviceInfoPath(cfg, device)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("device-info file of %s: %v, want none", device, err)
		}
	}
}

// TestDeviceInfoFollowsTheAllocations: each device's file is there when
// Allocate answers, takes the modes the memif wiring tells, stays
// through a takeover of its device, and is gone once every path that
// releases the allocation has run.
func TestDeviceInfoFollowsTheAllocations(t *testing.T) {
	cfg := testConfig(t)
	a := startAgent(t, cfg, nil)
	response, err := allocate(a, []string{"memif-000"}, []string{"memif-001", "memif-002"})
	if err != nil {
		t.Fatal(err)
	}
	single, pair := response.ContainerResponses[0], response.ContainerResponses[1]
	wantDeviceInfo(t, cfg, single, deviceinfo.ModeEthernet, "memif-000")
	wantDeviceInfo(t, cfg, pair, deviceinfo.ModeEthernet, "memif-001", "memif-002")
	wantNoDeviceInfo(t, cfg, "memif-003")

	// The memif wiring tells the pair's modes: memif ID 0 (memif-001) in
	// an l3 network, 1 (memif-002) in an l2 one.
	pairID := pair.Annotations[dmapi.AnnotationSocketHost]
	pairID = filepath.Base(filepath.Dir(pairID))
	a.dm.SetMemifNetworks(pairID, []dmapi.MemifNetwork{{MemifID: 0, Network: "red", Mode: "ip"}, {MemifID: 1, Network: "lab", Mode: "ethernet"}})
	wantDeviceInfo(t, cfg, pair, deviceinfo.ModeIP, "memif-001")
	wantDeviceInfo(t, cfg, pair, deviceinfo.ModeEthernet, "memif-002")

	// Released with its pod.
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "ns", Name: "pair"}, UID: "uid-pair"}
	push(t, a, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{{Name: "app", MountSources: []string{pair.Mounts[0].HostPath}}}})
	push(t, a, &podapi.DeletePod{Pod: pod})
	wantNoDeviceInfo(t, cfg, "memif-001", "memif-002")

	// Taken over: kubelet hands memif-000 out again; its file is the new
	// allocation's, and the release of the holder's directory leaves it.
	again, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	resync(t, a)
	wantDeviceInfo(t, cfg, again.ContainerResponses[0], deviceinfo.ModeEthernet, "memif-000")

	// Abandoned: kubelet's call failed after the allocation was made.
	abandoned := manager.ReleaseAbandoned{AllocationIDs: []string{filepath.Base(again.ContainerResponses[0].Mounts[0].HostPath)}, Reason: "test"}
	push(t, a, &abandoned)
	wantNoDeviceInfo(t, cfg, "memif-000")
	if entries, err := os.ReadDir(cfg.DeviceInfoDir); err != nil || len(entries) != 0 {
		t.Errorf("device-info directory after every release: %v, %v; want it empty", entries, err)
	}
}

// TestDeviceInfoMadeWholeAtStart: at a start, every held device's file is
// written again unless whole (its mode kept), and the files of devices no
// allocation holds, and the temporary files a crash left, are removed;
// other resources' files stay.
func TestDeviceInfoMadeWholeAtStart(t *testing.T) {
	cfg := testConfig(t)
	first := startAgent(t, cfg, nil)
	response, err := allocate(first, []string{"memif-000"}, []string{"memif-001"}, []string{"memif-002"})
	if err != nil {
		t.Fatal(err)
	}
	first.dm.SetMemifNetworks(filepath.Base(response.ContainerResponses[0].Mounts[0].HostPath), []dmapi.MemifNetwork{{MemifID: 0, Mode: "ip"}})
	first.stop()

	// While the agent is down: memif-001's file is lost, memif-002's torn,
	// memif-005 (held by none) and a temporary file are left over, and
	// another resource's file is there.
	plant := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(cfg.DeviceInfoDir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(deviceInfoPath(cfg, "memif-001")); err != nil {
		t.Fatal(err)
	}
	plant(deviceinfo.FileName(cfg.ResourceName, "memif-002"), `{"type":"mem`)
	plant(deviceinfo.FileName(cfg.ResourceName, "memif-005"), `{}`)
	temp := "." + deviceinfo.FileName(cfg.ResourceName, "memif-006") + ".tmp-0123456789abcdef"
	plant(temp, `{}`)
	other := deviceinfo.FileName("example.com/other", "memif-005")
	plant(other, `{}`)

	startAgent(t, cfg, nil)
	wantDeviceInfo(t, cfg, response.ContainerResponses[0], deviceinfo.ModeIP, "memif-000")
	wantDeviceInfo(t, cfg, response.ContainerResponses[1], deviceinfo.ModeEthernet, "memif-001")
	wantDeviceInfo(t, cfg, response.ContainerResponses[2], deviceinfo.ModeEthernet, "memif-002")
	wantNoDeviceInfo(t, cfg, "memif-005")
	for _, name := range []string{temp} {
		if _, err := os.Lstat(filepath.Join(cfg.DeviceInfoDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left at start: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.DeviceInfoDir, other)); err != nil {
		t.Errorf("another resource's file: %v, want it left alone", err)
	}
}

// TestAllocateRefusedWhenDeviceInfoCannotBeWritten: kubelet gets a clear
// error naming the directory, and nothing of the allocation is left
// (state, directory, checkpoint); once the directory is usable the device
// is allocated. A takeover so refused keeps the holder and its file.
func TestAllocateRefusedWhenDeviceInfoCannotBeWritten(t *testing.T) {
	cfg := testConfig(t)
	if err := os.MkdirAll(cfg.DeviceInfoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, cfg, nil)
	holder, err := allocate(a, []string{"memif-000"})
	if err != nil {
		t.Fatal(err)
	}
	// Writable by others: refused, as a directory through which another
	// user could redirect the agent's writes.
	if err := os.Chmod(cfg.DeviceInfoDir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, devices := range [][]string{{"memif-001"}, {"memif-000"}} {
		_, err := allocate(a, devices)
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "device-info directory "+cfg.DeviceInfoDir) {
			t.Fatalf("Allocate %v into an unsafe device-info directory = %v, want it refused naming the directory", devices, err)
		}
	}
	if list := a.dm.ListAllocations(); len(list) != 1 || list[0].HostDir != holder.ContainerResponses[0].Mounts[0].HostPath {
		t.Errorf("allocations after the refusals = %v, want the holder alone", list)
	}
	resync(t, a) // the holder's directory release, had the takeover gone through
	if entries, _ := os.ReadDir(cfg.SocketRoot); len(entries) != 1 {
		t.Errorf("socket root after the refusals holds %v, want the holder's directory alone", entries)
	}
	if persisted, err := checkpoint.Load(cfg.CheckpointPath); err != nil || len(persisted.Allocations) != 1 {
		t.Errorf("checkpoint after the refusals = %+v, %v; want the holder alone", persisted, err)
	}
	if err := os.Chmod(cfg.DeviceInfoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	wantDeviceInfo(t, cfg, holder.ContainerResponses[0], deviceinfo.ModeEthernet, "memif-000")
	wantNoDeviceInfo(t, cfg, "memif-001")
	response, err := allocate(a, []string{"memif-001"})
	if err != nil {
		t.Fatalf("Allocate once the directory is usable: %v", err)
	}
	wantDeviceInfo(t, cfg, response.ContainerResponses[0], deviceinfo.ModeEthernet, "memif-001")
}

// TestNoDeviceInfoDir: device-info-dir "" writes no file and makes no
// directory.
func TestNoDeviceInfoDir(t *testing.T) {
	cfg := testConfig(t)
	spec := cfg.DeviceInfoDir
	cfg.DeviceInfoDir = ""
	a := startAgent(t, cfg, nil)
	if _, err := allocate(a, []string{"memif-000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(spec); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s with device-info-dir empty: %v, want nothing made", spec, err)
	}
}
