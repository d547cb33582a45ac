package eventloop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/gogo/protobuf/proto"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// commitJob is the transaction of one event, or of several merged in the
// order they ran, as the Committer gets it.
type commitJob struct {
	changes map[string]proto.Message
	// resync: changes is the complete value set.
	resync bool
	// heal: a failure schedules a healing resync (every event but
	// api.BestEffortIgnoreErrors ones).
	heal bool
	// resyncSeq is the last resync the job holds, 0 for none.
	resyncSeq uint64
	// seqNums are the events the job holds, in the order they ran.
	seqNums []uint64
	names   []string
	// waiters are the events whose outcome waits for the commit.
	waiters []commitWaiter
	// followUps are the events' follow-ups, in push order: they run once
	// the commit is done.
	followUps []controllerapi.Event
}

// commitWaiter is an event told its outcome once its transaction, and
// every one handed over before it, is committed: its handlers' error,
// joined with the commit's when the commit holds its transaction.
type commitWaiter struct {
	event      controllerapi.Event
	outcome    string
	handlerErr error
	// committing: the event's own transaction is in the commit.
	committing bool
}

// holdsNothing tells whether the job holds no transaction, only waiters
// of events that committed nothing.
func (j *commitJob) holdsNothing() bool { return len(j.seqNums) == 0 }

// merge adds next, which ran after j: the result leaves every key as
// committing j then next would.
func (j *commitJob) merge(next *commitJob) {
	if next.resync {
		j.changes, j.resync, j.resyncSeq = next.changes, true, next.resyncSeq
	} else {
		for key, value := range next.changes {
			if value == nil && j.resync {
				delete(j.changes, key)
				continue
			}
			j.changes[key] = value
		}
	}
	j.heal = j.heal || next.heal
	j.seqNums = append(j.seqNums, next.seqNums...)
	j.names = append(j.names, next.names...)
	j.waiters = append(j.waiters, next.waiters...)
	j.followUps = append(j.followUps, next.followUps...)
}

// description names the job's events for the Committer's logs.
func (j *commitJob) description() string {
	if len(j.seqNums) == 1 {
		return fmt.Sprintf("event #%d %s", j.seqNums[0], j.names[0])
	}
	return fmt.Sprintf("events #%d %s .. #%d %s (%d events merged)",
		j.seqNums[0], j.names[0], j.seqNums[len(j.seqNums)-1], j.names[len(j.names)-1], len(j.seqNums))
}

// commitResult is a job and what its commit returned.
type commitResult struct {
	job *commitJob
	err error
}

// commitWorker commits the loop's transactions off the loop goroutine, one
// at a time, in the order the loop ran their events. What the loop hands
// over while a commit is in progress is merged into one pending job, so
// that a Committer that hangs (VPP stopped) holds at most one job and each
// value is handed over once, however many events queue behind it.
type commitWorker struct {
	committer controllerapi.Committer
	timeout   time.Duration

	mu      sync.Mutex
	pending *commitJob
	// running: a job was taken and its result is not delivered yet.
	running bool
	closing bool
	// wake tells run that pending or closing changed.
	wake chan struct{}

	// results carries each outcome to whoever drains it: the loop
	// goroutine, then Close.
	results   chan commitResult
	done      chan struct{}
	startOnce sync.Once
}

func newCommitWorker(committer controllerapi.Committer, timeout time.Duration) *commitWorker {
	return &commitWorker{committer: committer, timeout: timeout,
		wake: make(chan struct{}, 1), results: make(chan commitResult), done: make(chan struct{})}
}

// start runs the worker goroutine; later calls do nothing. close stops it.
func (w *commitWorker) start() {
	w.startOnce.Do(func() { go w.run() })
}

// idle tells whether no job is pending or being committed.
func (w *commitWorker) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending == nil && !w.running
}

// add hands job over, after every job handed over before it.
func (w *commitWorker) add(job *commitJob) {
	w.mu.Lock()
	if w.pending == nil {
		w.pending = job
	} else {
		w.pending.merge(job)
	}
	w.mu.Unlock()
	w.signal()
}

// wait makes waiters wait for the commits handed over before them; false
// when none is pending or running (their outcome is known now).
func (w *commitWorker) wait(waiters ...commitWaiter) bool {
	w.mu.Lock()
	if w.pending == nil && !w.running {
		w.mu.Unlock()
		return false
	}
	if w.pending == nil {
		w.pending = &commitJob{changes: map[string]proto.Message{}}
	}
	w.pending.waiters = append(w.pending.waiters, waiters...)
	w.mu.Unlock()
	w.signal()
	return true
}

// close lets run commit what is pending and return; done is closed then.
func (w *commitWorker) close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.signal()
}

func (w *commitWorker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *commitWorker) run() {
	defer close(w.done)
	for {
		job := w.take()
		if job == nil {
			return
		}
		w.results <- commitResult{job: job, err: w.commit(job)}
		w.mu.Lock()
		w.running = false
		w.mu.Unlock()
	}
}

// take waits for the pending job; nil once closing and nothing is pending.
func (w *commitWorker) take() *commitJob {
	for {
		w.mu.Lock()
		job, closing := w.pending, w.closing
		w.pending = nil
		w.running = job != nil
		w.mu.Unlock()
		if job != nil || closing {
			return job
		}
		<-w.wake
	}
}

func (w *commitWorker) commit(job *commitJob) error {
	if job.holdsNothing() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	err := w.committer.Commit(ctx, controllerapi.CommitRequest{
		Changes:     job.changes,
		Resync:      job.resync,
		Description: job.description(),
	})
	if err != nil {
		return fmt.Errorf("commit %d values of %s: %w", len(job.changes), job.description(), err)
	}
	return nil
}

// handOff gives the transaction of the event just run to the commit
// worker, and records it as the committed configuration: the Committer
// keeps what it is asked for, and a healing resync re-sends it all after a
// failure. It reports whether anything was handed over; the job then
// tells waiter its outcome, and queues the transaction's follow-ups, once
// committed.
func (l *Loop) handOff(txn *eventTxn, rec *controllerapi.EventRecord, resync, heal bool, waiter *commitWaiter) bool {
	changes := txn.commitChanges(resync)
	if !resync && len(changes) == 0 {
		return false
	}
	job := &commitJob{changes: maps.Clone(changes), resync: resync, heal: heal,
		seqNums: []uint64{rec.SeqNum}, names: []string{rec.Name}, followUps: txn.followUps}
	if waiter != nil {
		waiter.committing = true
	}
	if resync {
		job.resyncSeq = rec.SeqNum
	}
	if waiter != nil {
		job.waiters = []commitWaiter{*waiter}
	}
	rec.Committed = len(changes)
	l.committed = txn.applyTo(l.committed, resync)
	l.commits.add(job)
	return true
}

// commitDone takes the outcome of a commit: the loop's health after a
// resync, a healing resync after a failure, and the follow-ups, which run
// next; the waiters learn their outcomes once those follow-ups have run.
func (l *Loop) commitDone(res commitResult) {
	if !res.job.holdsNothing() {
		l.committedJob(res)
	}
	outcomes := &pendingOutcomes{loop: l, waiters: make([]commitWaiter, len(res.job.waiters))}
	for i, waiter := range res.job.waiters {
		if waiter.committing && res.err != nil {
			waiter.outcome, waiter.handlerErr = outcomeError, errors.Join(waiter.handlerErr, res.err)
		}
		waiter.committing = false
		outcomes.waiters[i] = waiter
	}
	if len(res.job.followUps) == 0 {
		outcomes.Done(nil)
		return
	}
	queued := append([]controllerapi.Event{outcomes}, l.followUps...)
	l.followUps = append(res.job.followUps, queued...)
}

// pendingOutcomes are outcomes known, told once the follow-ups queued
// before them have run and what those handed over is committed: an event
// waited for is done with everything before it. It rides in the loop's
// follow-ups; the loop delivers it instead of processing it.
type pendingOutcomes struct {
	loop    *Loop
	waiters []commitWaiter
}

// deliver tells the outcomes once what was handed over before is committed.
func (l *Loop) deliver(outcomes *pendingOutcomes) {
	if !l.commits.wait(outcomes.waiters...) {
		outcomes.Done(nil)
	}
}

// Spec and String make pendingOutcomes an event.
func (*pendingOutcomes) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "PendingOutcomes"}
}
func (o *pendingOutcomes) String() string {
	return fmt.Sprintf("outcomes of %d events", len(o.waiters))
}

// Done tells each waiter its own outcome, also when the loop closes
// before the follow-ups ran.
func (o *pendingOutcomes) Done(error) {
	for _, waiter := range o.waiters {
		o.loop.finish(waiter.event, waiter.outcome, waiter.handlerErr)
	}
}

// committedJob records the outcome of a commit that held transactions.
func (l *Loop) committedJob(res commitResult) {
	last := res.job.seqNums[len(res.job.seqNums)-1]
	if res.err != nil {
		l.deps.Log.WarnS("controller commit failed", "seqNums", res.job.seqNums, "err", res.err)
		l.history.amend(res.job.seqNums, res.err)
		l.metrics.commits.WithLabelValues(outcomeError).Inc()
	} else {
		l.metrics.commits.WithLabelValues(outcomeOK).Inc()
	}
	switch {
	case res.err != nil && res.job.resync:
		l.resyncFailed(last, res.err)
	case res.err != nil && res.job.heal:
		l.scheduleHealing(last)
	case res.err == nil && res.job.resync:
		l.resyncCommitted(res.job.resyncSeq)
	}
}

// drainCommits takes the outcome of every commit still pending, once the
// loop goroutine has stopped.
func (l *Loop) drainCommits() {
	l.commits.start()
	l.commits.close()
	for {
		select {
		case res := <-l.commits.results:
			l.commitDone(res)
		case <-l.commits.done:
			return
		}
	}
}
