package manager

import (
	"errors"
	"fmt"
	"sync"

	"github.com/contivpp/memif-agent/internal/logs"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// errNotRegisteredYet is the readiness of a manager that has not tried to
// register yet.
var errNotRegisteredYet = errors.New("the device plugin has not registered with kubelet yet")

// readiness tracks what the device manager needs to do its work: its
// device plugin registered with kubelet and, with the pod tracker, a pod
// source answering the tracker (which logs when none does). It says at
// the default level when the registration changes (the supervisor logs
// each registration retry at debug level only, and an operator must see
// that kubelet cannot use the devices): one line per change, however many
// retries fail. Safe from any goroutine.
type readiness struct {
	log logs.Logger
	// pods is the pod tracker; nil without one.
	pods podapi.LivePodsSource

	mu            sync.Mutex
	registration  error // nil once registered
	registered    bool  // registered at least once
	registerFails bool  // the last attempt failed
	everReady     bool
}

func newReadiness(log logs.Logger, pods podapi.LivePodsSource) *readiness {
	return &readiness{log: log, pods: pods, registration: errNotRegisteredYet}
}

// err says why the manager is not ready; nil when it is.
func (r *readiness) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errLocked()
}

// errLocked is err under r.mu; a nil answer also records that the manager
// has been ready.
func (r *readiness) errLocked() error {
	if r.registration != nil {
		return r.registration
	}
	if r.pods != nil {
		if err := r.pods.PodSourcesAnswer(); err != nil {
			return err
		}
	}
	r.everReady = true
	return nil
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
		r.log.InfoS("registered with kubelet again: kubelet can hand out the devices", "kubeletSocket", socket)
	}
	r.registration, r.registered, r.registerFails = nil, true, false
	_ = r.errLocked() // notes a first readiness
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
		r.log.WarnS("the device plugin is not registered with kubelet any more: kubelet admits no pod asking for the devices until it is, retrying", "kubeletSocket", socket, "err", err)
		return
	}
	r.log.WarnS("the device plugin cannot register with kubelet yet: kubelet admits no pod asking for the devices until it does, retrying", "kubeletSocket", socket, "err", err)
}
