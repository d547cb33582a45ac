// Package testlog is the one logger the tests hand the code under test:
// what it logs goes to the test's log (New), fails the test when it is an
// error (FailOnError), is kept for the test to read (Recording), or is
// dropped (Discard, for benchmarks). A Logger is an internal/logs
// Logger, the one the agent's packages log through, and writes each line
// as logs.Line does (a secret redacted). Writer passes a program's output
// to the test's log a line at a time.
//
// It owns nothing but the lines it keeps; the agent must not use it.
package testlog
