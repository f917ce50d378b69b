//go:build !race

package server_test

// raceDetector is set when the tests run under the race detector.
const raceDetector = false
