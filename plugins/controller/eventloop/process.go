package eventloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// process runs one event through the handlers, commits its transaction,
// records it and tells the pusher the outcome.
func (l *Loop) process(event controllerapi.Event) {
	l.starting(event)
	l.seqNum++
	rec := controllerapi.EventRecord{
		SeqNum:      l.seqNum,
		Name:        event.GetName(),
		Description: event.String(),
		Method:      event.Method().String(),
		Start:       time.Now(),
	}
	var (
		txn     *eventTxn
		outcome string
		err     error
	)
	if event.Method().IsResync() {
		txn, outcome, err = l.resync(event, &rec)
	} else {
		txn, outcome, err = l.update(event, &rec)
	}
	rec.End = time.Now()
	if err != nil {
		rec.Error = err.Error()
		l.deps.Log.Warnf("controller event #%d %s failed: %v", rec.SeqNum, rec.Description, err)
	} else {
		l.deps.Log.Debugf("controller event #%d %s done", rec.SeqNum, rec.Description)
	}
	l.history.add(rec)
	l.metrics.events.WithLabelValues(rec.Name, outcome).Inc()
	l.metrics.duration.WithLabelValues(rec.Name).Observe(rec.End.Sub(rec.Start).Seconds())
	if txn != nil {
		// Follow-ups run right after the event that pushed them.
		l.followUps = append(txn.followUps, l.followUps...)
	}
	event.Done(err)
}

// resync asks every handler that wants the event to resync. After a handler
// error nothing is committed: a partial value set would remove the values of
// the handler that failed.
func (l *Loop) resync(event controllerapi.Event, rec *controllerapi.EventRecord) (*eventTxn, string, error) {
	l.resyncCount++
	// The handlers put the complete value set: nothing committed is kept.
	txn := newEventTxn(nil, l.cfg.QueueSize)
	var errs []error
	for _, handler := range l.handlersFor(event, controllerapi.Forward) {
		err := handler.Resync(event, l.resyncCount, txn)
		rec.Handlers = append(rec.Handlers, controllerapi.HandlerRecord{Handler: handler.String(), Action: "resync", Error: errString(err)})
		if err != nil {
			errs = append(errs, fmt.Errorf("handler %s failed to resync (resync #%d): %w", handler, l.resyncCount, err))
		}
	}
	err := errors.Join(errs...)
	if err == nil {
		err = l.commit(event, txn, rec, true, false)
	}
	if err != nil {
		l.setHealth(Health{State: Unhealthy, Err: err})
		l.scheduleHealing()
		return txn, outcomeError, err
	}
	l.setHealth(Health{State: Healthy})
	l.stopHealing()
	l.resetHealing()
	return txn, outcomeOK, nil
}

// update runs an update event through the handlers according to its
// transaction type and direction.
func (l *Loop) update(event controllerapi.Event, rec *controllerapi.EventRecord) (*eventTxn, string, error) {
	updateEvent, ok := event.(controllerapi.UpdateEvent)
	if !ok {
		return nil, outcomeError, fmt.Errorf("event %s has method %s but does not implement controllerapi.UpdateEvent: add TransactionType and Direction",
			event.GetName(), event.Method())
	}
	txnType := updateEvent.TransactionType()
	rec.TxnType = txnType.String()
	rec.Direction = updateEvent.Direction().String()
	txn := newEventTxn(l.committed, l.cfg.QueueSize)
	var (
		succeeded []controllerapi.EventHandler
		errs      []error
	)
	for _, handler := range l.handlersFor(event, updateEvent.Direction()) {
		change, err := handler.Update(event, txn)
		rec.Handlers = append(rec.Handlers, controllerapi.HandlerRecord{Handler: handler.String(), Action: "update", Change: change, Error: errString(err)})
		if err == nil {
			succeeded = append(succeeded, handler)
			continue
		}
		err = fmt.Errorf("handler %s failed to update for event %s: %w", handler, event.GetName(), err)
		if txnType == controllerapi.RevertOnFailure {
			return txn, outcomeReverted, errors.Join(err, l.revert(event, succeeded, rec))
		}
		errs = append(errs, err)
	}
	if err := l.commit(event, txn, rec, false, txnType == controllerapi.RevertOnFailure); err != nil {
		if txnType == controllerapi.RevertOnFailure {
			// A commit that failed or timed out may still have applied part
			// of the transaction; the healing resync sets the scheduler
			// back to what the handlers hold.
			l.scheduleHealing()
			return txn, outcomeReverted, errors.Join(err, l.revert(event, succeeded, rec))
		}
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	if err == nil {
		return txn, outcomeOK, nil
	}
	if txnType == controllerapi.BestEffort {
		l.scheduleHealing()
	}
	return txn, outcomeError, err
}

// revert undoes the handlers that succeeded, last first.
func (l *Loop) revert(event controllerapi.Event, succeeded []controllerapi.EventHandler, rec *controllerapi.EventRecord) error {
	var errs []error
	for _, handler := range slices.Backward(succeeded) {
		err := handler.Revert(event)
		rec.Handlers = append(rec.Handlers, controllerapi.HandlerRecord{Handler: handler.String(), Action: "revert", Error: errString(err)})
		if err != nil {
			errs = append(errs, fmt.Errorf("handler %s failed to revert event %s: %w", handler, event.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// commit hands the transaction to the Committer and records the new
// configuration. An update without changes is not committed. After a failed
// commit the configuration is still recorded unless it is reverted: the
// Committer keeps the values it was asked for and a healing resync re-sends
// them all.
func (l *Loop) commit(event controllerapi.Event, txn *eventTxn, rec *controllerapi.EventRecord, resync, revertOnFailure bool) error {
	changes := txn.commitChanges(resync)
	if !resync && len(changes) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(l.cfg.CommitTimeout))
	defer cancel()
	err := l.deps.Committer.Commit(ctx, controllerapi.CommitRequest{
		Changes:         changes,
		Resync:          resync,
		RevertOnFailure: revertOnFailure,
		Description:     fmt.Sprintf("event #%d %s", rec.SeqNum, event.GetName()),
	})
	if err != nil && revertOnFailure {
		return fmt.Errorf("commit %d values of event %s: %w", len(changes), event.GetName(), err)
	}
	rec.Committed = len(changes)
	l.committed = txn.applyTo(l.committed, resync)
	if err != nil {
		return fmt.Errorf("commit %d values of event %s: %w", len(changes), event.GetName(), err)
	}
	return nil
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
