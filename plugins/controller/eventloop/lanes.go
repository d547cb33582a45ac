package eventloop

import (
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// Lanes of the queue, the "lane" label of the refusals counter. Both share
// one queue, in push order; a lane is the room an event may take in it.
const (
	// admissionLane: events a pod's admission waits on
	// (controllerapi.EventSpec.Admission). They may take any free place in the
	// queue, and AdmissionQueueSize places are theirs alone.
	admissionLane = "admission"
	// backgroundLane: every other event. At most QueueSize of them wait at
	// once.
	backgroundLane = "background"
)

// laneOf returns the lane event is queued in.
func laneOf(event controllerapi.Event) string {
	if event.Spec().Admission {
		return admissionLane
	}
	return backgroundLane
}

// takeBackgroundRoom counts one more background event queued, unless
// QueueSize of them already are.
func (l *Loop) takeBackgroundRoom() bool {
	for {
		queued := l.backgroundQueued.Load()
		if queued >= int64(l.cfg.QueueSize) {
			return false
		}
		if l.backgroundQueued.CompareAndSwap(queued, queued+1) {
			return true
		}
	}
}

// dequeued gives back the room of an event taken from the queue.
func (l *Loop) dequeued(event controllerapi.Event) {
	if laneOf(event) == backgroundLane {
		l.backgroundQueued.Add(-1)
	}
}
