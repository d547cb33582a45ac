package manager

import (
	"errors"
	"fmt"
	"sync"
)

// errNotRegisteredYet is the readiness of a manager that has not tried to
// register yet.
var errNotRegisteredYet = errors.New("the device plugin has not registered with kubelet yet")

// readiness tracks what the device manager needs to do its work: its
// device plugin registered with kubelet and, when it has a pod lister, a
// pod source answering. It says at the default level when that changes
// (the supervisor logs each registration retry at debug level only, and an
// operator must see that kubelet cannot use the devices): one line per
// change, however many retries fail. Safe from any goroutine.
type readiness struct {
	log Logger
	// needsPods: a pod lister is configured.
	needsPods bool

	mu            sync.Mutex
	registration  error // nil once registered
	registered    bool  // registered at least once
	registerFails bool  // the last attempt failed
	pods          error // nil once a pod source answered the last listing
	podsFailing   bool  // the last listing failed
	everReady     bool
}

func newReadiness(log Logger, needsPods bool) *readiness {
	r := &readiness{log: log, needsPods: needsPods, registration: errNotRegisteredYet}
	if needsPods {
		r.pods = errors.New("the pods have not been listed yet")
	}
	return r
}

// err says why the manager is not ready; nil when it is.
func (r *readiness) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errLocked()
}

func (r *readiness) errLocked() error {
	if r.registration != nil {
		return r.registration
	}
	return r.pods
}

// wasReady tells whether the manager has been ready at least once.
func (r *readiness) wasReady() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.everReady
}

func (r *readiness) registeredAt(socket string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.registerFails {
		r.log.Infof("registered with kubelet at %s again: kubelet can hand out the devices", socket)
	}
	r.registration, r.registered, r.registerFails = nil, true, false
	r.everReady = r.everReady || r.errLocked() == nil
}

func (r *readiness) registrationFailed(socket string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registration = fmt.Errorf("not registered with kubelet at %s: %w", socket, err)
	if r.registerFails {
		return
	}
	r.registerFails = true
	if r.registered {
		r.log.Warnf("the device plugin is not registered with kubelet at %s any more (%v); kubelet admits no pod asking for the devices until it is, retrying", socket, err)
		return
	}
	r.log.Warnf("the device plugin cannot register with kubelet at %s yet (%v); kubelet admits no pod asking for the devices until it does, retrying", socket, err)
}

// podsListed records the outcome of a listing of the live pods: err when
// no source answered.
func (r *readiness) podsListed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	wasFailing := r.podsFailing
	r.podsFailing = err != nil
	if err != nil {
		r.pods = fmt.Errorf("no pod source answers: %w", err)
		if !wasFailing {
			r.log.Warnf("no pod source answers (%v): allocations are not reconciled with the pods until one does, retrying", err)
		}
		return
	}
	if wasFailing {
		r.log.Infof("a pod source answers again")
	}
	r.pods = nil
	r.everReady = r.everReady || r.errLocked() == nil
}
