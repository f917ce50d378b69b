//go:build race

package server_test

// raceDetector is set when the tests run under the race detector, which
// runs the whole suite at once at several times the CPU: tests of a real
// process's memory under load (TestEvictionRSS) measure the machine then.
const raceDetector = true
