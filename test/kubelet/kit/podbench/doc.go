// Package podbench times pods on a real node (the cluster kit) for the
// end-to-end benchmarks: how long a pod takes from its creation to
// Running, seen through a watch, and the comparison of two kinds of pods
// (the subject and its baseline) measured in the same run, alternating,
// reported as medians and their ratio.
//
// It creates the pods it times and nothing else: deleting them, and waiting
// for what a deletion releases, is the caller's.
package podbench
