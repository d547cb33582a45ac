package allocation

import (
	"context"
	"sync"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
)

// watchers fans allocation changes out without ever blocking: a watcher
// whose channel is full is dropped and its channel closed, so it knows to
// list again. The mutex makes a send and the close of the same channel
// exclusive.
type watchers struct {
	mu   sync.Mutex
	byID map[*watcher]struct{}
}

type watcher struct {
	changes chan<- dmapi.AllocationChange
	// stopAfterFunc detaches the context hook once the watcher is dropped.
	stopAfterFunc func() bool
}

// Watch sends every later change to changes until ctx ends or changes is
// full; either way changes is then closed.
func (s *State) Watch(ctx context.Context, changes chan<- dmapi.AllocationChange) {
	w := &watcher{changes: changes}
	s.watchers.mu.Lock()
	defer s.watchers.mu.Unlock()
	if s.watchers.byID == nil {
		s.watchers.byID = map[*watcher]struct{}{}
	}
	s.watchers.byID[w] = struct{}{}
	w.stopAfterFunc = context.AfterFunc(ctx, func() { s.watchers.drop(w) })
}

func (ws *watchers) drop(w *watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.dropLocked(w)
}

func (ws *watchers) dropLocked(w *watcher) {
	if _, ok := ws.byID[w]; !ok {
		return
	}
	delete(ws.byID, w)
	w.stopAfterFunc()
	close(w.changes)
}

func (ws *watchers) notify(change dmapi.AllocationChange) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.byID {
		select {
		case w.changes <- change:
		default:
			ws.dropLocked(w)
		}
	}
}
