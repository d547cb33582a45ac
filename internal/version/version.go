// Package version says which build of memif-agent is running: its version
// and git commit, set at link time by the Makefile's build target and
// scripts/image.sh (-ldflags "-X ...", both from git describe and
// git rev-parse), and the VPP release its binary-API messages were
// generated from (vppmsg.VPPRelease).
//
// A binary built without those flags (go build, go run, go test) is
// version "devel" of commit "unknown".
//
// The package owns nothing else: no flags, no output.
package version

import (
	"fmt"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// Set with -ldflags "-X github.com/contivpp/memif-agent/internal/version.version=..."
// (and .commit); plain variables, because -X sets only those.
var (
	version string
	commit  string
)

// Build is what one binary was built from.
type Build struct {
	// Version is git describe --tags --always --dirty of the checkout,
	// or "devel".
	Version string
	// Commit is the full git commit, or "unknown".
	Commit string
	// VPPRelease is the VPP build whose .api.json files the agent's
	// messages were generated from; the agent refuses a VPP whose
	// messages differ.
	VPPRelease string
}

// Get returns this binary's build.
func Get() Build {
	b := Build{Version: version, Commit: commit, VPPRelease: vppmsg.VPPRelease}
	if b.Version == "" {
		b.Version = "devel"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// String is what memif-agent --version prints, one fact a line.
func (b Build) String() string {
	return fmt.Sprintf("memif-agent %s\ngit commit: %s\nVPP release: %s (binary API messages generated from it)\n", b.Version, b.Commit, b.VPPRelease)
}
