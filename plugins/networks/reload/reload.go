package reload

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// DefaultDebounce is Options.Debounce's default.
const DefaultDebounce = 200 * time.Millisecond

// Options say what to watch and whom to tell.
type Options[T any] struct {
	// Path is the file.
	Path string
	// Parse turns the file's content into a config, or says why not.
	Parse func(content []byte) (T, error)
	// Apply gets each new valid config.
	Apply func(T)
	// Refuse gets why a new version was not applied.
	Refuse func(error)
	// Debounce is how long the directory must be quiet before the file is
	// read; 0: DefaultDebounce.
	Debounce time.Duration
	// MayBeMissing lets the file be missing at Start, which then hands
	// Parse nil content; the file is applied once it is written.
	MayBeMissing bool
}

// Watcher watches one config file.
type Watcher[T any] struct {
	opts     Options[T]
	watcher  *fsnotify.Watcher
	lastSeen []byte
	// missing: the file was missing when last read.
	missing  bool
	stop     chan struct{}
	done     sync.WaitGroup
	stopOnce sync.Once
}

// Start reads the file, which must be valid, and watches it from then on.
// It returns the watcher and the file's config.
func Start[T any](opts Options[T]) (*Watcher[T], T, error) {
	var zero T
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, zero, fmt.Errorf("watch %s: %w", opts.Path, err)
	}
	// Watching before the first read: a change between the two is seen.
	if err := watcher.Add(filepath.Dir(opts.Path)); err != nil {
		watcher.Close()
		return nil, zero, fmt.Errorf("watch the directory of %s: %w", opts.Path, err)
	}
	w := &Watcher[T]{opts: opts, watcher: watcher, stop: make(chan struct{})}
	content, err := configfile.ReadFile(opts.Path)
	if opts.MayBeMissing && errors.Is(err, fs.ErrNotExist) {
		content, err, w.missing = nil, nil, true
	}
	var cfg T
	if err == nil {
		cfg, err = w.parse(content)
	}
	if err != nil {
		watcher.Close()
		return nil, zero, err
	}
	w.lastSeen = content
	w.done.Add(1)
	go w.run()
	return w, cfg, nil
}

// Stop stops watching and waits until no Apply or Refuse runs; it is safe
// to call more than once.
func (w *Watcher[T]) Stop() {
	w.stopOnce.Do(func() {
		close(w.stop)
		w.done.Wait()
		w.watcher.Close()
	})
}

func (w *Watcher[T]) run() {
	defer w.done.Done()
	// Stopped until the first event; since Go 1.23 a stopped timer's
	// channel holds no stale tick.
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	for {
		select {
		case <-w.stop:
			return
		case _, ok := <-w.watcher.Events:
			if !ok {
				return
			}
			quiet.Reset(w.opts.Debounce)
		case err, ok := <-w.watcher.Errors:
			if !ok {
				return
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.opts.Refuse(fmt.Errorf("watch %s: %w", w.opts.Path, err))
			}
			// Events may have been lost: read the file again.
			quiet.Reset(w.opts.Debounce)
		case <-quiet.C:
			w.reload()
		}
	}
}

// reload reads the file and applies or refuses a new version. A file
// removed is refused once, however often the directory changes while it
// is gone, and the file written again is a new version.
func (w *Watcher[T]) reload() {
	content, err := configfile.ReadFile(w.opts.Path)
	if errors.Is(err, fs.ErrNotExist) {
		if !w.missing {
			w.missing, w.lastSeen = true, nil
			w.opts.Refuse(fmt.Errorf("config file %s was removed; keeping the config applied before until it is written again: %w", w.opts.Path, err))
		}
		return
	}
	if err == nil && !w.missing && bytes.Equal(content, w.lastSeen) {
		return
	}
	// After a refusal, the content seen before it is new again.
	w.missing, w.lastSeen = false, content
	var cfg T
	if err == nil {
		cfg, err = w.parse(content)
	}
	if err != nil {
		w.opts.Refuse(fmt.Errorf("%w; keeping the config applied before", err))
		return
	}
	w.opts.Apply(cfg)
}

// parse parses content, naming the file in its error (configfile's
// errors of reading name it already).
func (w *Watcher[T]) parse(content []byte) (T, error) {
	cfg, err := w.opts.Parse(content)
	if err != nil {
		return cfg, fmt.Errorf("config file %s: %w", w.opts.Path, err)
	}
	return cfg, nil
}
