package fakekubelet

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// CheckpointEntry is one container's devices and answer in kubelet's
// device checkpoint.
type CheckpointEntry struct {
	PodUID, ContainerName, ResourceName string
	// DeviceIDs are by NUMA node, "-1" for none.
	DeviceIDs map[string][]string
	Answer    *pluginapi.ContainerAllocateResponse
	// RawAnswer is written instead of Answer when Answer is nil.
	RawAnswer []byte
}

// WriteCheckpoint writes entries as kubelet v1.37's device manager writes
// its checkpoint (kubelet_internal_checkpoint in pluginDir), with a
// checksum that is not kubelet's: the real file is written by the real
// kubelet in test/kubelet.
func WriteCheckpoint(t testing.TB, pluginDir string, entries ...CheckpointEntry) {
	t.Helper()
	type kubeletEntry struct {
		PodUID        string
		ContainerName string
		ResourceName  string
		DeviceIDs     map[string][]string
		AllocResp     []byte
	}
	written := make([]kubeletEntry, len(entries))
	for i, e := range entries {
		answer := e.RawAnswer
		if e.Answer != nil {
			var err error
			if answer, err = proto.Marshal(e.Answer); err != nil {
				t.Fatal(err)
			}
		}
		written[i] = kubeletEntry{PodUID: e.PodUID, ContainerName: e.ContainerName, ResourceName: e.ResourceName, DeviceIDs: e.DeviceIDs, AllocResp: answer}
	}
	content, err := json.Marshal(map[string]any{
		"Data":     map[string]any{"PodDeviceEntries": written, "RegisteredDevices": map[string][]string{}},
		"Checksum": 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(pluginDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pluginDir, "kubelet_internal_checkpoint"), content, 0o600); err != nil {
		t.Fatal(err)
	}
}
