package manager

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/securedir"
)

// trashName is the directory under the socket root where released
// allocation directories wait for the remover: on the socket root's
// filesystem, so that moving one there is a rename, and 0700, so that no
// pod reaches it by path.
const trashName = ".trash"

// smallDirEntries: a released directory of at most this many entries,
// none a directory (a pod's sockets and memif.json), is removed on the
// event loop at once; a bigger one is moved to the trash.
const smallDirEntries = 16

// The remover retries a removal that failed after firstRetry, doubling
// up to maxRetry.
const (
	firstRetry = time.Second
	maxRetry   = 10 * time.Minute
)

// Before each batch of names it removes, the remover waits until the
// device manager has handled nothing for quietFor (looking every
// quietPoll), but never longer than maxYield: the unlinks of a flooded
// directory go between admissions, not into their checkpoint's journal
// commit, and a steady stream of admissions still leaves it a batch every
// maxYield.
const (
	quietFor  = 10 * time.Millisecond
	quietPoll = time.Millisecond
	maxYield  = 100 * time.Millisecond
)

// The remover's thread runs at the lowest CPU priority and in the idle
// I/O class (ioprio_set(2)): lowering its own priority needs no
// privilege.
const (
	removerNice       = 19
	ioprioWhoProcess  = 1
	ioprioClassIdle   = 3
	ioprioClassShift  = 13
	ioprioIdlePrioVal = ioprioClassIdle << ioprioClassShift
)

// remover empties the trash off the event loop, one entry at a time, so
// that a pod that filled its directory with files or directories delays
// only their removal, not the other pods' admission. Its goroutine runs
// from the manager's Start to its Stop; each run first removes what a
// crash or a stop left in the trash.
type remover struct {
	// openRoot opens the socket root, where trashPath is.
	openRoot  func() (*securedir.Dir, error)
	trashPath string
	log       logs.Logger
	metrics   *metrics
	now       func() time.Time
	// kick wakes the goroutine: something was moved to the trash.
	kick chan struct{}
	// activity is the device manager's work, which the remover yields to.
	activity activity
	// beforeRemove, when set (tests), is called on the remover's
	// goroutine with each entry's name before it is removed.
	beforeRemove func(name string)
	// yielded, when set (tests), is called on the remover's goroutine
	// each time it waits for the device manager's work.
	yielded func()

	// failing are the entries whose removal failed, by name; touched only
	// on the remover's goroutine.
	failing map[string]*failedRemoval

	// stop and done are the running goroutine's, guarded by the manager's
	// serverMu.
	stop context.CancelFunc
	done chan struct{}
}

type failedRemoval struct {
	attempts int
	wait     time.Duration
	retryAt  time.Time
}

// activity counts the kubelet calls and events the device manager is
// handling, and keeps when the last ended; safe from any goroutine.
type activity struct {
	// epoch is what idleSince counts from, on the monotonic clock.
	epoch     time.Time
	handling  atomic.Int32
	idleSince atomic.Int64
}

// begin and end bracket one call or event.
func (a *activity) begin() { a.handling.Add(1) }

func (a *activity) end() {
	a.idleSince.Store(int64(time.Since(a.epoch)))
	a.handling.Add(-1)
}

// idleFor tells whether nothing is being handled, and nothing has been
// for d (or ever).
func (a *activity) idleFor(d time.Duration) bool {
	if a.handling.Load() != 0 {
		return false
	}
	last := a.idleSince.Load()
	return last == 0 || time.Since(a.epoch)-time.Duration(last) >= d
}

func newRemover(socketRoot string, openRoot func() (*securedir.Dir, error), log logs.Logger, metrics *metrics, now func() time.Time) *remover {
	return &remover{openRoot: openRoot, trashPath: filepath.Join(socketRoot, trashName), log: log, metrics: metrics, now: now,
		activity: activity{epoch: time.Now()}, kick: make(chan struct{}, 1), failing: map[string]*failedRemoval{}}
}

// start runs the goroutine; stop ends it and waits for it.
func (r *remover) start() {
	ctx, stop := context.WithCancel(context.Background())
	r.stop, r.done = stop, make(chan struct{})
	go func() {
		defer close(r.done)
		// The thread stays locked to the end: it exits with the
		// goroutine, its lowered priority with it.
		runtime.LockOSThread()
		r.lowerPriority()
		r.run(ctx)
	}()
}

// lowerPriority puts the calling thread at the lowest CPU priority and in
// the idle I/O class, so that the unlinks of a flooded directory take the
// CPU and disk only when others leave them.
func (r *remover) lowerPriority() {
	tid := unix.Gettid()
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, removerNice); err != nil {
		r.log.InfoS("the remover of released directories runs at the normal CPU priority", "err", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ioprioIdlePrioVal); errno != 0 {
		r.log.InfoS("the remover of released directories runs in the normal I/O class", "err", errno)
	}
}

// yield waits until the device manager has handled nothing for quietFor,
// at most maxYield; only an ended ctx is an error.
func (r *remover) yield(ctx context.Context) error {
	if r.activity.idleFor(quietFor) {
		return ctx.Err()
	}
	if r.yielded != nil {
		r.yielded()
	}
	deadline := time.NewTimer(maxYield)
	defer deadline.Stop()
	poll := time.NewTicker(quietPoll)
	defer poll.Stop()
	for !r.activity.idleFor(quietFor) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return nil
		case <-poll.C:
		}
	}
	return nil
}

func (r *remover) halt() {
	if r.stop == nil {
		return
	}
	r.stop()
	<-r.done
	r.stop, r.done = nil, nil
}

// wake tells the goroutine that the trash holds something new.
func (r *remover) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *remover) run(ctx context.Context) {
	for {
		var retry <-chan time.Time
		timer := time.NewTimer(0)
		timer.Stop()
		if wait := r.empty(ctx); wait > 0 {
			timer.Reset(wait)
			retry = timer.C
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-r.kick:
		case <-retry:
		}
		timer.Stop()
	}
}

// empty removes the trash's entries not waiting for a retry, again while
// removals leave new ones (directories moved up from a deep tree), and
// returns how long until the next retry is due; 0: none is.
func (r *remover) empty(ctx context.Context) time.Duration {
	for ctx.Err() == nil {
		if !r.pass(ctx) {
			break
		}
	}
	var next time.Duration
	now := r.now()
	for _, f := range r.failing {
		if wait := max(f.retryAt.Sub(now), time.Millisecond); next == 0 || wait < next {
			next = wait
		}
	}
	return next
}

// pass tries once each entry of the trash not waiting for a retry, and
// tells whether it removed any.
func (r *remover) pass(ctx context.Context) bool {
	trash, err := r.openTrash()
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	var entries []fs.DirEntry
	if err == nil {
		defer trash.Close()
		entries, err = trash.Entries()
	}
	if err != nil {
		r.failed(trashName, r.trashPath, err)
		return false
	}
	delete(r.failing, trashName)
	removed := false
	listed := map[string]bool{}
	for _, entry := range entries {
		name := entry.Name()
		listed[name] = true
		if f := r.failing[name]; f != nil && r.now().Before(f.retryAt) {
			continue
		}
		if r.beforeRemove != nil {
			r.beforeRemove(name)
		}
		if r.yield(ctx) != nil {
			return false
		}
		err := trash.RemoveAllPaced(ctx, name, r.yield)
		if ctx.Err() != nil {
			return false
		}
		if err != nil {
			r.failed(name, trash.Join(name), err)
			continue
		}
		removed = true
		if f := r.failing[name]; f != nil {
			r.log.InfoS("removed a released directory after failed attempts", "dir", trash.Join(name), "attempts", f.attempts+1)
			delete(r.failing, name)
		}
	}
	for name := range r.failing {
		if !listed[name] {
			delete(r.failing, name)
		}
	}
	return removed
}

func (r *remover) openTrash() (*securedir.Dir, error) {
	root, err := r.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.PrivateDir(trashName, false)
}

// failed schedules the next attempt at name, with backoff, and logs and
// counts only the first failure: a directory that cannot be removed is
// reported once, not at every attempt.
func (r *remover) failed(name, path string, err error) {
	f := r.failing[name]
	if f == nil {
		f = &failedRemoval{wait: firstRetry}
		r.failing[name] = f
		r.metrics.countError("remove-directory")
		r.log.WarnS("a released directory was not removed: retried with backoff, not logged again", "dir", path, "err", err)
	} else {
		f.wait = min(2*f.wait, maxRetry)
	}
	f.attempts++
	f.retryAt = r.now().Add(f.wait)
}
