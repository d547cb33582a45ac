package eventloop

import (
	"errors"
	"fmt"
	"slices"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// process runs one event through the handlers, hands its transaction to
// the commit worker, records it and tells the pusher the outcome: an
// admission event at once; any other once its transaction, and every one
// handed over before it, is committed (commitDone).
func (l *Loop) process(event controllerapi.Event) {
	l.starting(event)
	l.seqNum++
	spec := event.Spec()
	rec := controllerapi.EventRecord{
		SeqNum:      l.seqNum,
		Name:        spec.Name,
		Description: event.String(),
		Method:      spec.Method.String(),
		Start:       time.Now(),
	}
	var ran handled
	if spec.Method.IsResync() {
		ran = l.resync(event, &rec)
	} else {
		ran = l.update(event, spec, &rec)
	}
	if ran.err != nil {
		l.dropFollowUps(ran.txn, &rec)
	}
	var waiter *commitWaiter
	if !spec.Admission {
		waiter = &commitWaiter{event: event, outcome: ran.outcome, handlerErr: ran.err}
	}
	handedOff := ran.commit && l.handOff(ran.txn, &rec, spec.Method.IsResync(), ran.heal, waiter)
	rec.End = time.Now()
	if ran.err != nil {
		rec.Error = ran.err.Error()
		l.deps.Log.WarnS("controller event failed", "seqNum", rec.SeqNum, "event", rec.Description, "err", ran.err)
	} else {
		l.deps.Log.DebugS("controller event done", "seqNum", rec.SeqNum, "event", rec.Description)
	}
	l.history.add(rec)
	l.metrics.duration.WithLabelValues(rec.Name).Observe(rec.End.Sub(rec.Start).Seconds())
	if ran.txn != nil && !handedOff {
		// Follow-ups run right after the event that pushed them, or after
		// its commit (commitDone).
		l.followUps = append(ran.txn.followUps, l.followUps...)
	}
	switch {
	case waiter == nil:
	case handedOff:
		return
	case l.commits.wait(*waiter):
		// It committed nothing, and is told its outcome once what was
		// handed over before it is committed.
		return
	}
	l.finish(event, ran.outcome, ran.err)
}

// dropFollowUps forgets the follow-ups a failed or reverted event pushed:
// they were pushed for the change the event made, which did not happen as
// the handler that pushed them saw it (a handler after it failed, the
// vswitch side it counted on was not removed, or the handler reverted).
// Each is told controllerapi.ErrDroppedFollowUp.
func (l *Loop) dropFollowUps(txn *eventTxn, rec *controllerapi.EventRecord) {
	if txn == nil || len(txn.followUps) == 0 {
		return
	}
	names := make([]string, len(txn.followUps))
	for i, followUp := range txn.followUps {
		names[i] = followUp.String()
		tell(followUp, fmt.Errorf("%s, pushed by event #%d %s: %w", followUp.Spec().Name, rec.SeqNum, rec.Name, controllerapi.ErrDroppedFollowUp))
	}
	l.deps.Log.WarnS("controller event failed: its follow-ups are dropped", "seqNum", rec.SeqNum, "event", rec.Description, "followUps", names)
	txn.followUps = nil
}

// finish counts event's outcome and tells its pusher.
func (l *Loop) finish(event controllerapi.Event, outcome string, err error) {
	l.metrics.events.WithLabelValues(event.Spec().Name, outcome).Inc()
	tell(event, err)
}

// handled is what running an event through the handlers gave.
type handled struct {
	txn     *eventTxn
	outcome string
	err     error
	// commit: txn is to be committed; heal: a failed commit schedules a
	// healing resync.
	commit, heal bool
}

// resync asks every handler that wants the event to resync. After a handler
// error nothing is committed: a partial value set would remove the values of
// the handler that failed.
func (l *Loop) resync(event controllerapi.Event, rec *controllerapi.EventRecord) handled {
	// The handlers put the complete value set: nothing committed is kept.
	txn := newEventTxn(l.cfg.QueueSize)
	var errs []error
	for _, handler := range l.handlersFor(event, controllerapi.Forward) {
		err := handler.Resync(event, txn)
		rec.Handlers = append(rec.Handlers, controllerapi.HandlerRecord{Handler: handler.String(), Action: "resync", Error: errString(err)})
		if err != nil {
			errs = append(errs, fmt.Errorf("handler %s failed to resync (event #%d %s): %w", handler, rec.SeqNum, rec.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		l.resyncFailed(l.seqNum, err)
		return handled{txn: txn, outcome: outcomeError, err: err}
	}
	// The loop's health follows the commit (commitDone).
	return handled{txn: txn, outcome: outcomeOK, commit: true, heal: true}
}

// update runs an update event through the handlers according to its
// transaction type and direction.
func (l *Loop) update(event controllerapi.Event, spec controllerapi.EventSpec, rec *controllerapi.EventRecord) handled {
	txnType := spec.Transaction
	rec.TxnType = txnType.String()
	rec.Direction = spec.Direction.String()
	txn := newEventTxn(l.cfg.QueueSize)
	var (
		succeeded []controllerapi.EventHandler
		errs      []error
	)
	for _, handler := range l.handlersFor(event, spec.Direction) {
		change, err := handler.Update(event, txn)
		rec.Handlers = append(rec.Handlers, controllerapi.HandlerRecord{Handler: handler.String(), Action: "update", Change: change, Error: errString(err)})
		if err == nil {
			succeeded = append(succeeded, handler)
			continue
		}
		err = fmt.Errorf("handler %s failed to update for event %s: %w", handler, spec.Name, err)
		if txnType == controllerapi.RevertOnFailure {
			return handled{txn: txn, outcome: outcomeReverted, err: errors.Join(err, l.revert(event, succeeded, rec))}
		}
		errs = append(errs, err)
	}
	ran := handled{txn: txn, outcome: outcomeOK, commit: true, heal: txnType != controllerapi.BestEffortIgnoreErrors}
	if ran.err = errors.Join(errs...); ran.err != nil {
		ran.outcome = outcomeError
		if txnType == controllerapi.BestEffort {
			l.scheduleHealing(l.seqNum)
		}
	}
	return ran
}

// revert undoes the handlers that succeeded, last first.
func (l *Loop) revert(event controllerapi.Event, succeeded []controllerapi.EventHandler, rec *controllerapi.EventRecord) error {
	var errs []error
	for _, handler := range slices.Backward(succeeded) {
		err := handler.Revert(event)
		rec.Handlers = append(rec.Handlers, controllerapi.HandlerRecord{Handler: handler.String(), Action: "revert", Error: errString(err)})
		if err != nil {
			errs = append(errs, fmt.Errorf("handler %s failed to revert event %s: %w", handler, rec.Name, err))
		}
	}
	return errors.Join(errs...)
}

// handlersFor returns the handlers that want event, in the order of dir.
func (l *Loop) handlersFor(event controllerapi.Event, dir controllerapi.UpdateDirectionType) []controllerapi.EventHandler {
	var wanted []controllerapi.EventHandler
	for _, handler := range l.deps.Handlers {
		if handler.HandlesEvent(event) {
			wanted = append(wanted, handler)
		}
	}
	if dir == controllerapi.Reverse {
		slices.Reverse(wanted)
	}
	return wanted
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
