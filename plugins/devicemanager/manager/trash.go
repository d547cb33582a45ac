package manager

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

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
	// beforeRemove, when set (tests), is called on the remover's
	// goroutine with each entry's name before it is removed.
	beforeRemove func(name string)

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

func newRemover(socketRoot string, openRoot func() (*securedir.Dir, error), log logs.Logger, metrics *metrics, now func() time.Time) *remover {
	return &remover{openRoot: openRoot, trashPath: filepath.Join(socketRoot, trashName), log: log, metrics: metrics, now: now,
		kick: make(chan struct{}, 1), failing: map[string]*failedRemoval{}}
}

// start runs the goroutine; stop ends it and waits for it.
func (r *remover) start() {
	ctx, stop := context.WithCancel(context.Background())
	r.stop, r.done = stop, make(chan struct{})
	go func() {
		defer close(r.done)
		r.run(ctx)
	}()
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
		err := trash.RemoveAll(ctx, name)
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
