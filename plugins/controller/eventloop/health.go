package eventloop

import "time"

// HealthState says whether the loop keeps the configuration in sync.
type HealthState int

const (
	// Starting: the startup resync has not finished yet.
	Starting HealthState = iota
	// Healthy: the last full resync succeeded.
	Healthy
	// Unhealthy: the last full resync failed; a healing resync is scheduled.
	Unhealthy
)

// String returns the state name.
func (s HealthState) String() string {
	switch s {
	case Starting:
		return "starting"
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	}
	return "unknown"
}

// Health is the loop's state and, when unhealthy, the error that made it so.
type Health struct {
	State HealthState
	Err   error
}

// Health returns the current health; safe from any goroutine.
func (l *Loop) Health() Health {
	l.healthMu.Lock()
	defer l.healthMu.Unlock()
	return l.health
}

func (l *Loop) setHealth(h Health) {
	l.healthMu.Lock()
	changed := l.health.State != h.State || l.health.Err != h.Err
	l.health = h
	l.healthMu.Unlock()
	if changed && l.deps.HealthChanged != nil {
		l.deps.HealthChanged(h)
	}
}

// scheduleHealing arms the healing timer unless it is armed already; each
// call without a successful resync in between doubles the next delay.
// failedSeq is the event whose failure asks for it: only a resync run
// after it heals it.
func (l *Loop) scheduleHealing(failedSeq uint64) {
	l.lastFailure = max(l.lastFailure, failedSeq)
	if l.healingTimer != nil {
		return
	}
	l.healingTimer = time.NewTimer(l.healingDelay.Next())
}

// resyncFailed marks the loop unhealthy and schedules healing; seq is the
// failed resync, or the last event of a failed commit that held one.
func (l *Loop) resyncFailed(seq uint64, err error) {
	l.lastFailedResync = max(l.lastFailedResync, seq)
	l.setHealth(Health{State: Unhealthy, Err: err})
	l.scheduleHealing(seq)
}

// resyncCommitted takes resync seq committed. Events run on, and fail,
// while the commits of those before them are in progress: the loop is
// healthy only if no resync failed after seq, and the healing is over only
// if no event failed after it.
func (l *Loop) resyncCommitted(seq uint64) {
	if seq > l.lastFailedResync {
		l.setHealth(Health{State: Healthy})
	}
	if seq > l.lastFailure {
		l.stopHealing()
		l.resetHealing()
	}
}

// resetHealing restores the first healing delay after a successful resync.
func (l *Loop) resetHealing() { l.healingDelay.Reset() }

func (l *Loop) stopHealing() {
	if l.healingTimer != nil {
		l.healingTimer.Stop()
		l.healingTimer = nil
	}
}

// healingC is the healing timer's channel, or nil (never ready) when none
// is armed.
func (l *Loop) healingC() <-chan time.Time {
	if l.healingTimer == nil {
		return nil
	}
	return l.healingTimer.C
}
