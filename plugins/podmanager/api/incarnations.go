package api

import "sort"

// LatestIncarnations turns a runtime's pods grouped by UID into one pod per
// ID, ordered by ID, with containers ordered by name and runtime ID: when
// several incarnations (UIDs) of a pod are left, the pod is the one whose
// newest container (newest, by UID) was created last, since kubelet creates
// a new incarnation only after the old one was deleted.
func LatestIncarnations(byUID map[string]*PodState, newest map[string]int64) []PodState {
	byID := map[PodID]*PodState{}
	for uid, pod := range byUID {
		current, found := byID[pod.Pod.ID]
		if !found || newerIncarnation(uid, newest[uid], current.Pod.UID, newest[current.Pod.UID]) {
			byID[pod.Pod.ID] = pod
		}
	}
	pods := make([]PodState, 0, len(byID))
	for _, pod := range byID {
		sort.Slice(pod.Containers, func(a, b int) bool {
			left, right := pod.Containers[a], pod.Containers[b]
			if left.Name != right.Name {
				return left.Name < right.Name
			}
			return left.RuntimeID < right.RuntimeID
		})
		pods = append(pods, *pod)
	}
	sort.Slice(pods, func(a, b int) bool { return pods[a].Pod.ID.String() < pods[b].Pod.ID.String() })
	return pods
}

// newerIncarnation orders incarnations by their newest container, then by
// UID so that the choice does not depend on map order.
func newerIncarnation(uid string, created int64, otherUID string, otherCreated int64) bool {
	if created != otherCreated {
		return created > otherCreated
	}
	return uid > otherUID
}
