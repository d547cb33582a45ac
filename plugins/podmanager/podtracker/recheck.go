package podtracker

import (
	"sort"
	"time"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Rechecks of a pod that left Docker while kubelet still listed it: kubelet
// kills and removes a deleted pod's containers first and drops the pod from
// its active pods a moment later, so the pod is asked for again soon rather
// than at the next reconciliation. The first recheck comes after
// recheckMinDelay, each next one after twice the delay, up to
// recheckMaxDelay: the cap bounds how long a pod outlives kubelet's
// forgetting it. Rechecks are never closer together than recheckMinDelay
// and all pods due share one listing, so however many pods wait, they cost
// kubelet's rate-limited pod-resources server (100 calls a second) at most
// ten calls a second, and two and a half once the delays reach the cap.
const (
	recheckMinDelay = 100 * time.Millisecond
	recheckMaxDelay = 400 * time.Millisecond
)

// recheckSchedule holds the pods waiting for a recheck. It is owned by the
// tracker's run goroutine; every method takes the current time so that the
// schedule itself does not read the clock.
type recheckSchedule struct {
	// lifetime is how long a pod is rechecked; after that the periodic
	// reconciliation alone follows it.
	lifetime time.Duration
	pods     map[podapi.PodID]*recheck
	// lastRun is when the due rechecks were last taken.
	lastRun time.Time
}

type recheck struct {
	pod     podapi.Pod
	delay   time.Duration
	due     time.Time
	expires time.Time
}

func newRecheckSchedule(lifetime time.Duration) *recheckSchedule {
	return &recheckSchedule{lifetime: lifetime, pods: map[podapi.PodID]*recheck{}}
}

// add schedules pod for a first recheck; a pod already waiting keeps its
// schedule, so repeated Docker events do not reset the backoff.
func (s *recheckSchedule) add(pod podapi.Pod, now time.Time) {
	if waiting, found := s.pods[pod.ID]; found {
		waiting.pod = pod
		return
	}
	s.pods[pod.ID] = &recheck{pod: pod, delay: recheckMinDelay, due: now.Add(recheckMinDelay), expires: now.Add(s.lifetime)}
}

// backOff schedules the next recheck of a pod kubelet still lists, after
// twice the last delay. It returns false, and forgets the pod, once the
// pod has been rechecked for the schedule's lifetime.
func (s *recheckSchedule) backOff(id podapi.PodID, now time.Time) bool {
	waiting, found := s.pods[id]
	if !found {
		return false
	}
	waiting.delay = min(2*waiting.delay, recheckMaxDelay)
	waiting.due = now.Add(waiting.delay)
	if waiting.due.After(waiting.expires) {
		delete(s.pods, id)
		return false
	}
	return true
}

// drop forgets a pod: it was decided by other means.
func (s *recheckSchedule) drop(id podapi.PodID) { delete(s.pods, id) }

// ids returns the pods waiting, in no particular order.
func (s *recheckSchedule) ids() []podapi.PodID {
	ids := make([]podapi.PodID, 0, len(s.pods))
	for id := range s.pods {
		ids = append(ids, id)
	}
	return ids
}

// takeDue returns the pods whose recheck is due at now, ordered by ID; they
// stay scheduled until backOff or drop.
func (s *recheckSchedule) takeDue(now time.Time) []podapi.Pod {
	var due []podapi.Pod
	for _, waiting := range s.pods {
		if !waiting.due.After(now) {
			due = append(due, waiting.pod)
		}
	}
	if len(due) > 0 {
		s.lastRun = now
	}
	sort.Slice(due, func(a, b int) bool { return due[a].ID.String() < due[b].ID.String() })
	return due
}

// next returns when rechecks are next due; false when no pod waits.
func (s *recheckSchedule) next() (time.Time, bool) {
	var earliest time.Time
	for _, waiting := range s.pods {
		if earliest.IsZero() || waiting.due.Before(earliest) {
			earliest = waiting.due
		}
	}
	if earliest.IsZero() {
		return time.Time{}, false
	}
	if spaced := s.lastRun.Add(recheckMinDelay); earliest.Before(spaced) {
		earliest = spaced
	}
	return earliest, true
}
