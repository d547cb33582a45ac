package benchmarks

import (
	"slices"
	"time"
)

// median returns the median of samples (the lower middle one for an even
// count), 0 for none.
func median(samples []float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(samples))
	return sorted[(len(sorted)-1)/2]
}

// medianDuration is median for durations.
func medianDuration(samples []time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(samples))
	return sorted[(len(sorted)-1)/2]
}
