package podtracker

import "time"

// answered is which pod sources answered one comparison.
type answered struct {
	runtime bool
	kubelet bool
	// kubeletConfigured: kubelet's pod-resources is one of the sources.
	kubeletConfigured bool
}

// goneAfter is the one policy that decides when a pod the sources do not
// list is gone: it returns how long the comparisons must have missed the
// pod before it is, and false when this comparison may find no pod gone.
//
//   - The runtime answered, and kubelet too (or none is configured): at
//     once. The runtime holds a pod's containers until kubelet has freed
//     its devices, so kubelet's gap after a restart hides nothing.
//   - The runtime answered, kubelet was asked and did not: never. kubelet
//     may have admitted a pod whose containers do not exist yet.
//   - kubelet alone answered: once missed for grace. kubelet is the
//     authority on devices, but lists no pod for a moment after it
//     restarts.
//   - Neither answered: never.
func goneAfter(a answered, grace time.Duration) (time.Duration, bool) {
	switch {
	case a.runtime && (a.kubelet || !a.kubeletConfigured):
		return 0, true
	case a.runtime:
		return 0, false
	case a.kubelet:
		return grace, true
	}
	return 0, false
}
