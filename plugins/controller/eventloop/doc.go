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
//     admission (api.EventSpec.Admission: kubelet's Allocate, DRA
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
// The event contract. Each rule names the tests that check it.
//
//   - Spec. Every event declares how it runs with an api.EventSpec
//     (its type's Spec method, or an embedded EventSpec). The zero spec is
//     a best-effort update that visits the handlers forward and that no
//     one waits for; a spec names what differs. PushEvent and PushFollowUp
//     refuse, with api.ErrInvalidEvent, an event without a name and a
//     blocking one that has no Done (TestSpecDecidesHowAnEventRuns,
//     TestEventsTheLoopCannotHonourAreRefused).
//   - Order. One event at a time, on the loop goroutine. Start runs a full
//     resync before anything else; events pushed before it completes wait
//     and run after it. Then events run in the order they were pushed,
//     whatever their lane (TestStartupResyncRunsBeforeHeldUpdates,
//     TestAdmissionsGetTheirOwnRoom). An update visits the handlers that
//     want it (HandlesEvent) in registration order, or in reverse order for
//     api.Reverse (TestUpdateVisitsHandlersInOrder).
//   - Blocking. A blocking event embeds *api.Result: its pusher waits with
//     Wait. The loop tells every event that has a Done its outcome exactly
//     once, whether it ran, failed, was dropped or never ran because the
//     loop closed (TestEveryAwaitedEventIsToldOnce, TestCloseFailsEveryWaiter).
//     A handler cannot push a blocking follow-up: it would wait on the loop
//     that runs it (api.ErrBlockingFollowUp, TestBlockingFollowUpIsRefused).
//   - Admission lane. The queue has two lanes of room and one order.
//     Admissions (EventSpec.Admission: kubelet's Allocate, DRA
//     NodePrepareResources) may take any free place, and
//     admission-queue-size places are theirs alone; every other event is a
//     background event, and at most event-queue-size of them wait at once.
//     So a flood of AddPod or LivePods events fills its own
//     room and is refused with api.ErrEventQueueFull (its pushers retry),
//     but cannot refuse an admission: that happens only once
//     admission-queue-size admissions wait and the background room is full
//     too. An admission overtakes nothing, so what a handler learnt from an
//     earlier event (a pod deleted, a pod announced) is known when it runs;
//     it is told its outcome once its handlers ran, before its commit (the
//     commit contract above). events_refused_total counts refusals by
//     event, lane and reason (TestAdmissionsGetTheirOwnRoom,
//     TestPushEventRefusals, TestAdmissionAnswersWhileCommitHangs).
//   - Failure and revert. api.RevertOnFailure: at the first handler error
//     the handlers that already succeeded are reverted in reverse order and
//     nothing is committed; the handler that failed must leave nothing of
//     the event itself (TestRevertOnFailure). api.BestEffort: the other
//     handlers still run, what they put is committed, the error is
//     reported to the event and a healing full resync is scheduled with
//     exponential backoff; api.BestEffortIgnoreErrors reports the error
//     only (TestBestEffortErrors, TestHealingResync). A failed commit is
//     healed, never reverted (TestFailedCommitHeals).
//   - Follow-ups. Follow-ups pushed by a handler run once the current
//     event's transaction is committed, before anything queued then: right
//     after the event when it commits nothing, else as soon as its commit
//     is done (so a socket directory released by a follow-up outlives the
//     interface the event deleted), while the events queued meanwhile run
//     (TestFollowUpsRunBeforeQueuedEvents,
//     TestFollowUpsRunAfterTheirEventsCommit). They run after a failed
//     commit too: the committed configuration already holds what the event
//     put, and the healing resync applies it
//     (TestFollowUpsRunAfterAFailedCommit). Follow-ups of an event that
//     failed (any handler's error, under every transaction type) or was
//     reverted are dropped, each told api.ErrDroppedFollowUp: they were
//     pushed for a change that did not happen as the pushing handler saw
//     it (a takeover whose Allocate failed must not remove the directory
//     of the holder VPP still listens in) (TestFollowUpsOfAFailedEventAreDropped).
//   - Resync. A full resync asks every handler to put the complete value
//     set it wants; the loop commits it as such and keys no handler put
//     are removed (TestFullResyncCommitsCompleteValueSet,
//     TestFullResyncReplacesTheValueSet). A resync that a handler fails
//     commits nothing (a partial value set would remove the values of the
//     handler that failed), marks the loop unhealthy and schedules the
//     next healing resync; a committed one marks it healthy, unless a
//     resync run after it failed (TestHealingResync). Requested resyncs
//     (Loop.Resync) queued and not started yet are shared
//     (TestRequestedResyncsCoalesce).
//   - Closing. PushEvent never blocks. Close stops after the event in
//     progress, runs the commits still pending, and every event still
//     queued gets api.ErrClosedEventLoop (TestCloseFailsEveryWaiter); Drain
//     processes what is queued first (TestDrainProcessesWhatWasQueued).
//
// What a handler may do, on the loop goroutine: read and change the state
// it owns, read other handlers' state through their documented API, write
// local files for durability, put and delete values in the event's
// transaction, and push non-blocking follow-ups. What it may not: wait for
// anything the loop does (a blocking event, a commit: it runs on the loop
// and would wait on itself), call a peer over the network (kubelet, the
// container runtime, VPP: every admission waits behind the event in
// progress; what it needs is gathered off the loop and carried in the
// event), keep the event or its transaction after it returns, or leave
// anything of an event it fails (its own Revert is not called; the loop
// reverts only the handlers before it).
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
