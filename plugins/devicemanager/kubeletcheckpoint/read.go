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
)

// FileName is the checkpoint's name in kubelet's device plugin directory.
const FileName = "kubelet_internal_checkpoint"

// maxBytes bounds what is read: an entry per container holding devices,
// a few hundred bytes each.
const maxBytes = 64 << 20

// Answer is one container's answer for the resource, as kubelet keeps it.
type Answer struct {
	PodUID        string
	ContainerName string
	// DeviceIDs are the devices kubelet gave the container, sorted.
	DeviceIDs   []string
	Envs        map[string]string
	Annotations map[string]string
	Mounts      []Mount
}

// Mount is a mount of an answer.
type Mount struct {
	HostPath      string
	ContainerPath string
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

// Read returns the answers for resource in the checkpoint in pluginDir; a
// missing checkpoint holds none. An entry whose answer does not decode is
// skipped and named in the error, which comes with the other answers.
func Read(pluginDir, resource string) ([]Answer, error) {
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
	var answers []Answer
	var errs []error
	for _, e := range checkpoint.Data.PodDeviceEntries {
		if e.ResourceName != resource {
			continue
		}
		answer, err := e.answer()
		if err != nil {
			errs = append(errs, fmt.Errorf("kubelet's device checkpoint %s: pod %s container %s: %w", path, e.PodUID, e.ContainerName, err))
			continue
		}
		answers = append(answers, answer)
	}
	return answers, errors.Join(errs...)
}

func (e entry) answer() (Answer, error) {
	var response pluginapi.ContainerAllocateResponse
	if err := proto.Unmarshal(e.AllocResp, &response); err != nil {
		return Answer{}, fmt.Errorf("answer does not decode: %w", err)
	}
	answer := Answer{
		PodUID: e.PodUID, ContainerName: e.ContainerName,
		Envs: response.GetEnvs(), Annotations: response.GetAnnotations(),
	}
	for _, ids := range e.DeviceIDs {
		answer.DeviceIDs = append(answer.DeviceIDs, ids...)
	}
	slices.Sort(answer.DeviceIDs)
	answer.DeviceIDs = slices.Compact(answer.DeviceIDs)
	if len(answer.DeviceIDs) == 0 {
		return Answer{}, errors.New("no device")
	}
	for _, m := range response.GetMounts() {
		answer.Mounts = append(answer.Mounts, Mount{HostPath: m.GetHostPath(), ContainerPath: m.GetContainerPath()})
	}
	return answer, nil
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
