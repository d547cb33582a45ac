package podtracker

import (
	"maps"
	"slices"
	"sort"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Merge joins what the runtime and kubelet know of one pod; nil means the
// source does not list it, and a nil result means the pod is gone. The
// runtime gives the pod's UID and containers; kubelet adds each container's
// device IDs, and the containers it admitted that do not exist yet.
func Merge(runtime, kubelet *podapi.PodState) *podapi.PodState {
	if runtime == nil && kubelet == nil {
		return nil
	}
	merged := podapi.PodState{}
	if runtime != nil {
		merged.Pod = runtime.Pod
		merged.Containers = slices.Clone(runtime.Containers)
	} else {
		merged.Pod = kubelet.Pod
	}
	if kubelet == nil {
		return &merged
	}
	for _, admitted := range kubelet.Containers {
		found := false
		for i := range merged.Containers {
			if merged.Containers[i].Name == admitted.Name {
				merged.Containers[i].DeviceIDs = maps.Clone(admitted.DeviceIDs)
				found = true
			}
		}
		if !found {
			merged.Containers = append(merged.Containers, admitted)
		}
	}
	sort.SliceStable(merged.Containers, func(a, b int) bool {
		left, right := merged.Containers[a], merged.Containers[b]
		if left.Name != right.Name {
			return left.Name < right.Name
		}
		return left.RuntimeID < right.RuntimeID
	})
	return &merged
}

// MergeAll merges two complete listings into the live pods, ordered by ID.
func MergeAll(runtime, kubelet []podapi.PodState) []podapi.PodState {
	byID := map[podapi.PodID][2]*podapi.PodState{}
	for i := range runtime {
		sources := byID[runtime[i].Pod.ID]
		sources[0] = &runtime[i]
		byID[runtime[i].Pod.ID] = sources
	}
	for i := range kubelet {
		sources := byID[kubelet[i].Pod.ID]
		sources[1] = &kubelet[i]
		byID[kubelet[i].Pod.ID] = sources
	}
	live := make([]podapi.PodState, 0, len(byID))
	for _, sources := range byID {
		live = append(live, *Merge(sources[0], sources[1]))
	}
	sort.Slice(live, func(a, b int) bool { return live[a].Pod.ID.String() < live[b].Pod.ID.String() })
	return live
}

// Decide compares what was announced of a pod with what is live now and
// returns the new announced state and the events that tell the difference.
// nil means not announced, or gone.
func Decide(announced, live *podapi.PodState) (*podapi.PodState, []controllerapi.Event) {
	switch {
	case live == nil && announced == nil:
		return nil, nil
	case live == nil:
		return nil, []controllerapi.Event{&podapi.DeletePod{Pod: announced.Pod}}
	case announced == nil:
		return live, []controllerapi.Event{addPod(live)}
	}
	next := *live
	if next.Pod.UID == "" {
		// Only kubelet lists the pod now; it is the incarnation announced,
		// with the annotations its sandbox carried.
		next.Pod.UID = announced.Pod.UID
		next.Pod.Networks = announced.Pod.Networks
	}
	if announced.Pod.UID != "" && next.Pod.UID != announced.Pod.UID {
		return &next, []controllerapi.Event{&podapi.DeletePod{Pod: announced.Pod}, addPod(&next)}
	}
	if next.Pod != announced.Pod || !sameContainers(next.Containers, announced.Containers) {
		return &next, []controllerapi.Event{addPod(&next)}
	}
	return announced, nil
}

// sameContainers tells whether two listings of a pod's containers hold the
// same evidence. Device IDs and mount sources are sets: the sources list
// them sorted, and a source that did not would still not make an unchanged
// pod look changed, which would announce it again at every reconciliation.
func sameContainers(a, b []podapi.PodContainer) bool {
	return slices.EqualFunc(a, b, func(x, y podapi.PodContainer) bool {
		return x.Name == y.Name && x.RuntimeID == y.RuntimeID &&
			sameSet(x.MountSources, y.MountSources) &&
			maps.Equal(x.Annotations, y.Annotations) &&
			maps.EqualFunc(x.DeviceIDs, y.DeviceIDs, sameSet)
	})
}

// sameSet tells whether a and b hold the same strings, as many times each.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func addPod(state *podapi.PodState) *podapi.AddPod {
	return &podapi.AddPod{Pod: state.Pod, Containers: slices.Clone(state.Containers)}
}
