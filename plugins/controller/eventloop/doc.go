// Package eventloop is the controller's event loop: one goroutine that takes
// events from a bounded queue and runs them, one at a time, through an
// ordered list of api.EventHandlers, then commits the transaction the
// handlers filled to a Committer (the vpp-agent KV scheduler in the agent).
//
// What it owns: the event queue, follow-up events, the committed
// configuration (key -> value, as last handed to the Committer), the event
// history, the loop's health and its Prometheus metrics. It touches no
// handler state and imports no plugin framework; the controller plugin wires
// it into the agent.
//
// Rules the loop enforces:
//   - Start runs a full resync (resyncCount 1) before anything else. Events
//     pushed before it completes wait in the queue and run after it, in the
//     order they were pushed.
//   - Update events visit the handlers in registration order, or in reverse
//     order for api.Reverse. Follow-ups pushed by a handler run right after
//     the current event, before anything already queued; a blocking follow-up
//     is refused with api.ErrBlockingFollowUp. Follow-ups pushed by an event
//     that fails still run: they are events of their own.
//   - api.RevertOnFailure: at the first handler error the handlers that
//     already succeeded are reverted in reverse order and nothing is
//     committed. api.BestEffort: the other handlers still run, what they put
//     is committed, the error is reported to the event and a healing full
//     resync is scheduled with exponential backoff. A failed full resync marks
//     the loop unhealthy and schedules the next healing resync; a successful
//     one marks it healthy. api.BestEffortIgnoreErrors reports the error only.
//   - A full or downstream resync commits the complete value set the handlers
//     put; keys they did not put are removed. During such a resync,
//     Transaction.Get sees only what the resync has put so far. An upstream resync commits what
//     the handlers changed, like an update.
//   - PushEvent never blocks. Close runs a ShutdownEvent through the handlers
//     (reverse order), and every event still queued gets api.ErrClosedEventLoop.
//   - The queue has two lanes of room and one order. Admission events
//     (api.AdmissionEvent: kubelet's Allocate, DRA NodePrepareResources) may
//     take any free place, and admission-queue-size places are theirs
//     alone; every other event is a background event, and at most
//     event-queue-size of them wait at once. So a flood of AddPod or
//     ReconcileAllocations events fills its own room and is refused with
//     api.ErrEventQueueFull (its pushers retry), but cannot refuse an
//     admission: that happens only once admission-queue-size admissions wait
//     and the background room is full too. Events of both lanes run in the
//     order they were pushed: an admission overtakes nothing, so what a
//     handler learnt from an earlier event (a pod deleted, a pod announced)
//     is known when the admission runs. events_refused_total counts refusals
//     by event, lane and reason.
//
// Example:
//
//	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{
//		Handlers:  []api.EventHandler{deviceManager, memifWiring},
//		Committer: committer,
//		Metrics:   prometheus.NewRegistry(),
//	})
//	if err != nil { ... }
//	loop.Start()
//	defer loop.Close()
//	err = loop.PushEvent(event)
package eventloop
