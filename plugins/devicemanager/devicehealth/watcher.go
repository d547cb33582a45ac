package devicehealth

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/contivpp/memif-agent/internal/logs"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// Watcher keeps the devices' health; it implements
// dmapi.DeviceHealthSource. Create it with New.
type Watcher struct {
	vswitch vswitchapi.VswitchAPI
	grace   time.Duration
	log     logs.Logger
	now     func() time.Time

	mu      sync.Mutex
	current dmapi.DeviceHealth
	changed chan struct{}
}

var _ dmapi.DeviceHealthSource = (*Watcher)(nil)

// New returns a watcher of vswitch (nil: no vswitch, always healthy) that
// reports the devices unhealthy once it has been unreachable for longer
// than grace. The devices are healthy until Run finds otherwise.
func New(vswitch vswitchapi.VswitchAPI, grace time.Duration, log logs.Logger) *Watcher {
	return &Watcher{vswitch: vswitch, grace: grace, log: log, now: time.Now,
		current: dmapi.DeviceHealth{Healthy: true, Since: time.Now()}, changed: make(chan struct{})}
}

// DeviceHealth implements dmapi.DeviceHealthSource.
func (w *Watcher) DeviceHealth() (dmapi.DeviceHealth, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current, w.changed
}

// Run follows the vswitch's reachability until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	if w.vswitch == nil {
		return
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		reachability, changed := w.vswitch.Reachability()
		wake := w.evaluate(reachability)
		timer.Stop()
		var expired <-chan time.Time
		if wake > 0 {
			timer.Reset(wake)
			expired = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-expired:
		}
	}
}

// evaluate sets the health r makes, and returns when to look again: the
// end of the grace of an unreachable vswitch, 0 for no time.
func (w *Watcher) evaluate(r vswitchapi.Reachability) time.Duration {
	if !r.Configured || r.Reachable {
		w.set(dmapi.DeviceHealth{Healthy: true, Since: w.now()})
		return 0
	}
	if left := r.Since.Add(w.grace).Sub(w.now()); left > 0 {
		return left
	}
	w.set(dmapi.DeviceHealth{Since: w.now(),
		Reason: fmt.Sprintf("vswitch unreachable since %s, longer than vswitch-health-grace %s: %v",
			r.Since.Format(time.RFC3339), w.grace, r.Err)})
	return 0
}

// set stores health and wakes the watchers, unless the devices already
// are as healthy as health says.
func (w *Watcher) set(health dmapi.DeviceHealth) {
	w.mu.Lock()
	if w.current.Healthy == health.Healthy {
		w.mu.Unlock()
		return
	}
	w.current = health
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
	if health.Healthy {
		w.log.InfoS("memif devices healthy again: the vswitch answers")
	} else {
		w.log.WarnS("memif devices reported unhealthy to kubelet and the scheduler: running pods keep their memifs", "reason", health.Reason)
	}
}
