package kubeletcheckpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceplugin"
)

// FileName is the checkpoint's name in kubelet's device plugin directory.
const FileName = "kubelet_internal_checkpoint"

// maxBytes bounds what is read: an entry per container holding devices,
// a few hundred bytes each.
const maxBytes = 64 << 20

// Entry is one container's devices and answer for the resource, as
// kubelet keeps them.
type Entry struct {
	PodUID        string
	ContainerName string
	// DeviceIDs are the devices kubelet gave the container, sorted.
	DeviceIDs []string
	// Answer is what the container got; kubelet keeps no AllocationID.
	Answer deviceplugin.Answer
}

// file is the part of kubelet's checkpoint this package reads.
type file struct {
	Data struct {
		PodDeviceEntries []entry
	}
}

type entry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	// DeviceIDs are by NUMA node.
	DeviceIDs map[string][]string
	AllocResp []byte
}

// Read returns the entries of resource in the checkpoint in pluginDir; a
// missing checkpoint holds none. An entry whose answer does not decode is
// skipped and named in the error, which comes with the other answers.
func Read(pluginDir, resource string) ([]Entry, error) {
	path := filepath.Join(pluginDir, FileName)
	content, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kubelet's device checkpoint %s: %w", path, err)
	}
	var checkpoint file
	if err := json.Unmarshal(content, &checkpoint); err != nil {
		return nil, fmt.Errorf("kubelet's device checkpoint %s is not one kubelet v1.37 writes: %w", path, err)
	}
	var entries []Entry
	var errs []error
	for _, e := range checkpoint.Data.PodDeviceEntries {
		if e.ResourceName != resource {
			continue
		}
		decoded, err := e.decode()
		if err != nil {
			errs = append(errs, fmt.Errorf("kubelet's device checkpoint %s: pod %s container %s: %w", path, e.PodUID, e.ContainerName, err))
			continue
		}
		entries = append(entries, decoded)
	}
	return entries, errors.Join(errs...)
}

func (e entry) decode() (Entry, error) {
	var response pluginapi.ContainerAllocateResponse
	if err := proto.Unmarshal(e.AllocResp, &response); err != nil {
		return Entry{}, fmt.Errorf("answer does not decode: %w", err)
	}
	decoded := Entry{
		PodUID: e.PodUID, ContainerName: e.ContainerName,
		Answer: deviceplugin.Answer{Envs: response.GetEnvs(), Annotations: response.GetAnnotations()},
	}
	for _, ids := range e.DeviceIDs {
		decoded.DeviceIDs = append(decoded.DeviceIDs, ids...)
	}
	slices.Sort(decoded.DeviceIDs)
	decoded.DeviceIDs = slices.Compact(decoded.DeviceIDs)
	if len(decoded.DeviceIDs) == 0 {
		return Entry{}, errors.New("no device")
	}
	for _, m := range response.GetMounts() {
		decoded.Answer.Mounts = append(decoded.Answer.Mounts, deviceplugin.Mount{HostPath: m.GetHostPath(), ContainerPath: m.GetContainerPath(), ReadOnly: m.GetReadOnly()})
	}
	return decoded, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(content) > maxBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxBytes)
	}
	return content, nil
}
