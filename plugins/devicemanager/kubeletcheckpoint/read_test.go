package kubeletcheckpoint

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
	"github.com/contivpp/memif-agent/test/kit/fakekubelet"
)

const resource = "contivpp.io/memif"

// containerEntry is one container's devices and answer for kubelet's checkpoint.
func containerEntry(pod, resourceName string, devices map[string][]string, answer *pluginapi.ContainerAllocateResponse) fakekubelet.CheckpointEntry {
	return fakekubelet.CheckpointEntry{PodUID: pod, ContainerName: "c0", ResourceName: resourceName, DeviceIDs: devices, Answer: answer}
}

func TestRead(t *testing.T) {
	ours := &pluginapi.ContainerAllocateResponse{
		Envs:        map[string]string{"MEMIF_SECRET": "s"},
		Annotations: map[string]string{"memif": "a"},
		Mounts:      []*pluginapi.Mount{{HostPath: "/run/memif/a", ContainerPath: "/run/vpp"}},
	}
	want := Entry{
		PodUID: "pod-a", ContainerName: "c0", DeviceIDs: []string{"memif-1", "memif-2"},
		Answer: deviceplugin.Answer{
			Envs: ours.Envs, Annotations: ours.Annotations, Mounts: []deviceplugin.Mount{{HostPath: "/run/memif/a", ContainerPath: "/run/vpp"}},
		},
	}
	for _, tc := range []struct {
		name    string
		write   func(t *testing.T, dir string)
		want    []Entry
		wantErr string
	}{
		{"no checkpoint", func(*testing.T, string) {}, nil, ""},
		{"devices of two NUMA nodes, other resources skipped", func(t *testing.T, dir string) {
			fakekubelet.WriteCheckpoint(t, dir,
				containerEntry("pod-a", resource, map[string][]string{"1": {"memif-2"}, "-1": {"memif-1"}}, ours),
				containerEntry("pod-b", "example.com/gpu", map[string][]string{"-1": {"gpu-0"}}, &pluginapi.ContainerAllocateResponse{}))
		}, []Entry{want}, ""},
		{"an answer that does not decode is named, the others kept", func(t *testing.T, dir string) {
			broken := containerEntry("pod-broken", resource, map[string][]string{"-1": {"memif-3"}}, nil)
			broken.RawAnswer = []byte{0xff, 0xff}
			fakekubelet.WriteCheckpoint(t, dir, broken, containerEntry("pod-a", resource, map[string][]string{"-1": {"memif-2", "memif-1"}}, ours))
		}, []Entry{want}, "pod pod-broken container c0: answer does not decode"},
		{"an entry with no device", func(t *testing.T, dir string) {
			fakekubelet.WriteCheckpoint(t, dir, containerEntry("pod-empty", resource, nil, ours))
		}, nil, "pod pod-empty container c0: no device"},
		{"not kubelet's format", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, FileName), []byte(`{"Data": [`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, nil, "is not one kubelet v1.37 writes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.write(t, dir)
			got, err := Read(dir, resource)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Read: %v; want an error containing %q", err, tc.wantErr)
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), filepath.Join(dir, FileName)) {
				t.Errorf("error %q does not name the file", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Read = %+v, want %+v", got, tc.want)
			}
		})
	}
}
