//go:build !race

package memifwiring_test

// raceDetector: the tests run under the race detector.
const raceDetector = false
