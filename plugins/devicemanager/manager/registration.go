package manager

import "sync"

// registrationLog says at the default level when the device plugin stops
// or starts being registered with kubelet: the supervisor logs each retry
// at debug level only, and an operator must see that kubelet cannot use
// the devices. One line per change, however many retries fail.
type registrationLog struct {
	log Logger

	mu sync.Mutex
	// failing: the last attempt failed; registered: one succeeded since.
	failing    bool
	registered bool
}

func (r *registrationLog) succeeded(socket string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing {
		r.log.Infof("registered with kubelet at %s again: kubelet can hand out the devices", socket)
	}
	r.failing, r.registered = false, true
}

func (r *registrationLog) failed(socket string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing {
		return
	}
	r.failing = true
	if r.registered {
		r.log.Warnf("the device plugin is not registered with kubelet at %s any more (%v); kubelet admits no pod asking for the devices until it is, retrying", socket, err)
		return
	}
	r.log.Warnf("the device plugin cannot register with kubelet at %s yet (%v); kubelet admits no pod asking for the devices until it does, retrying", socket, err)
}
