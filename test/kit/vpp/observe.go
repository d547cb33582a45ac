package vpp

import (
	"regexp"
	"strings"
	"testing"
)

var (
	rxQueueLine   = regexp.MustCompile(`(?m)^\s*(\S+) queue (\d+) \((\w+)\)`)
	tracedMessage = regexp.MustCompile(`(?m)^vl_api_(\w+)_t:`)
)

// RxModes returns the mode of each rx queue of the interface named
// vppName, as `show interface rx-placement` lists them.
func (v *VPP) RxModes(t testing.TB, vppName string) []string {
	t.Helper()
	var modes []string
	for _, m := range rxQueueLine.FindAllStringSubmatch(v.CLI(t, "show", "interface", "rx-placement"), -1) {
		if m[1] == vppName {
			modes = append(modes, m[3])
		}
	}
	return modes
}

// TraceAPI starts VPP's trace of the binary API messages it receives,
// from empty; TracedAPI returns their names since.
func (v *VPP) TraceAPI(t testing.TB) {
	t.Helper()
	for _, command := range []string{"api trace off", "api trace free", "api trace on"} {
		v.CLI(t, strings.Fields(command)...)
	}
}

// TracedAPI returns the names of the messages VPP received since TraceAPI.
func (v *VPP) TracedAPI(t testing.TB) []string {
	t.Helper()
	var names []string
	for _, m := range tracedMessage.FindAllStringSubmatch(v.CLI(t, "api", "trace", "dump"), -1) {
		names = append(names, m[1])
	}
	return names
}
