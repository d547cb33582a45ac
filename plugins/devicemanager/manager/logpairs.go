package manager

import "github.com/contivpp/memif-agent/plugins/devicemanager/allocation"

// allocationPairs are a's key/value pairs for the log, followed by more:
// what its String says, never its secret.
func allocationPairs(a allocation.Allocation, more ...any) []any {
	return append([]any{"allocation", a.ID, "devices", a.DeviceIDs, "pod", a.Pod, "podUID", a.PodUID,
		"container", a.ContainerName, "socket", a.HostSocket}, more...)
}
