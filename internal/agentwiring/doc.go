// Package agentwiring makes the agent's plugins and wires them to one
// another: which plugin gets which dependency, the order in which the
// controller's handlers see events, the order of the handover, and the
// wrappers that keep cn-infra's dependency lookup from starting a plugin
// before what it waits for. cmd/memif-agent runs what New returns;
// internal/inprocess runs the same in a test's process.
//
// It owns no state and starts nothing: cn-infra (or the test harness)
// calls the plugins' Init, AfterInit and Close. Where each plugin's
// config file is found is the caller's (Configs); the HTTP server the
// agent serves its probes, metrics and history on, with its limits and
// its masking of secrets, is here (http.go, redact.go).
package agentwiring
