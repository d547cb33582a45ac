// Package eventloop is the controller's event loop: one goroutine that takes
// events from a bounded queue and runs them, one at a time, through an
// ordered list of api.EventHandlers, then hands the transaction the
// handlers filled to its commit worker, which commits it to a Committer
// (the vpp-agent KV scheduler in the agent, whose descriptors call VPP).
//
// What it owns: the event queue, follow-up events, the commit worker, the
// committed configuration (key -> value, as last handed to the Committer),
// the event history, the loop's health and its Prometheus metrics. It
// touches no handler state and imports no plugin framework; the controller
// plugin wires it into the agent.
//
// The commit contract: a hung vswitch never holds admission.
//   - The loop goroutine never waits for a commit. It hands each
//     transaction to the commit worker and runs the next event, so an
//     admission (api.AdmissionEvent: kubelet's Allocate, DRA
//     NodePrepareResources) queued behind events whose commits wait on VPP
//     runs as soon as the handlers before it are done, and its pusher is
//     told its outcome right after its own handlers: never after a VPP call.
//     Every other event is told its outcome once its transaction, and every
//     one handed over before it, is committed (the handlers' error joined
//     with its own commit's), so Loop.Resync and the resync endpoint still
//     answer when VPP holds the configuration, and a blocking event no
//     handler wants is a barrier for everything before it.
//   - One commit runs at a time, in the order the events ran, each bounded
//     by commit-timeout. What is handed over while a commit runs is merged
//     into one pending commit that leaves every key as committing each
//     transaction in turn would (a later value replaces an earlier one, a
//     resync replaces everything before it): a Committer that hangs holds
//     one pending commit however many events run meanwhile, and each value
//     is handed over once.
//   - The committed configuration is what the handlers put, recorded when
//     it is handed over, whatever the commit's outcome. A failed commit
//     reverts no handler (later events ran on top of it), is added to its
//     events' history records and schedules a healing resync (except for
//     api.BestEffortIgnoreErrors events); a failed resync commit marks the
//     loop unhealthy. The resync re-sends the complete value set, and the
//     KV scheduler reads VPP back before it applies anything, so what a
//     stopped VPP owes is applied once when it answers again (the vswitch
//     plugin also pushes a resync then), and nothing VPP already holds is
//     applied twice.
//   - Close runs the commits still pending before it returns.
//
// Rules the loop enforces:
//   - Start runs a full resync (resyncCount 1) before anything else. Events
//     pushed before it completes wait in the queue and run after it, in the
//     order they were pushed.
//   - Update events visit the handlers in registration order, or in reverse
//     order for api.Reverse. Follow-ups pushed by a handler run once the
//     current event's transaction is committed, before anything queued
//     then: right after the event when it commits nothing, else as soon as
//     its commit is done (so a socket directory released by a follow-up
//     outlives the interface the event deleted), while the events queued
//     meanwhile run. A blocking follow-up is refused with
//     api.ErrBlockingFollowUp. Follow-ups pushed by an event that fails
//     still run: they are events of their own.
//   - api.RevertOnFailure: at the first handler error the handlers that
//     already succeeded are reverted in reverse order and nothing is
//     committed. api.BestEffort: the other handlers still run, what they put
//     is committed, the error is reported to the event and a healing full
//     resync is scheduled with exponential backoff. A failed full resync marks
//     the loop unhealthy and schedules the next healing resync; a committed
//     one marks it healthy, unless a resync run after it failed.
//     api.BestEffortIgnoreErrors reports the error only.
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
