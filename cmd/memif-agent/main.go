// Command memif-agent is the node agent that gives Kubernetes pods memif
// interfaces to a userspace vswitch. It serves kubelet's device plugin API
// for contivpp.io/memif and runs every state change through one controller
// event loop; see the README for the flows and the configuration.
//
// Each plugin's config file is <plugin>.conf in -config-dir. A -config-dir
// that is given must exist: a missing one stops the agent, naming it. With
// no -config-dir no directory is read, and every plugin runs on its
// built-in defaults (a file a -<plugin>-config flag names is still read).
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/ligato/cn-infra/agent"
	"github.com/namsral/flag"

	"github.com/contivpp/memif-agent/internal/agentwiring"
	"github.com/contivpp/memif-agent/internal/version"
	"github.com/contivpp/memif-agent/plugins/devicemanager"
)

func main() {
	if slices.ContainsFunc(os.Args[1:], isVersionFlag) {
		fmt.Print(version.Get())
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == probeCommand {
		os.Exit(runProbe(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == scrapeCommand {
		os.Exit(runScrape(os.Args[2:], os.Stdout, os.Stderr))
	}
	memifAgent := agentwiring.New(forPlugin)
	if err := parseCommandLine(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	// SIGHUP (the terminal that started the agent went away) stops it as
	// SIGTERM does, closing its sockets, rather than killing it.
	quit := agent.QuitSignals(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// The device manager's Init may wait for the agent this one replaces.
	startTimeout := agent.StartTimeout(devicemanager.NodeLockWait + agent.DefaultStartTimeout)
	if err := agent.NewAgent(agent.AllPlugins(memifAgent), quit, startTimeout).Run(); err != nil {
		fmt.Fprintln(os.Stderr, "memif-agent:", err)
		os.Exit(1)
	}
}

// isVersionFlag: --version is read before the flags, not declared as one,
// because the flag package would also take it from $VERSION, which
// images and pods set for their own purposes.
func isVersionFlag(arg string) bool { return arg == "--version" || arg == "-version" }

// parseCommandLine parses the flags every plugin declared (forPlugin) and
// -config-dir. cn-infra's agent parses the command line only when nobody
// did, and exits 2 even for -help; here -help is ErrHelp, for an exit 0.
// A bad flag has been reported with the usage, and a -config-dir that is
// not a directory with what to do, when it returns.
func parseCommandLine(args []string) error {
	defineConfigDirFlag()
	flag.CommandLine.Init(os.Args[0], flag.ContinueOnError)
	flag.Usage = printUsage
	if err := flag.CommandLine.Parse(args); err != nil {
		return err
	}
	if err := checkConfigDir(); err != nil {
		fmt.Fprintln(os.Stderr, "memif-agent:", err)
		return err
	}
	return nil
}

func printUsage() {
	fmt.Fprintf(os.Stderr, `memif-agent gives Kubernetes pods memif interfaces to a userspace vswitch.

It registers the extended resource contivpp.io/memif with kubelet, answers
Allocate with a per-pod socket directory and secret, tracks which pod holds
which memif, and releases them when the pod goes away.

Every plugin reads a YAML config file: -<plugin>-config, a file name in
-config-dir (a path with a directory part is taken as it is). A missing file
means the plugin's defaults; an unknown key or a bad value stops the agent
with an error naming the file and the key. A -config-dir that does not exist
stops the agent; with no -config-dir, every plugin runs on its built-in
defaults. Each flag can also be set with the environment variable named in
its description.

Config files: %s.

Usage: memif-agent [flags]
       memif-agent probe [-socket PATH] liveness|readiness  (kubelet's exec probes)
       memif-agent scrape [-timeout D] http://ADDRESS:PORT/metrics  (print an agent's metrics)
       memif-agent --version  (the version, git commit and VPP release it speaks)

Flags:
`, configFiles())
	flag.CommandLine.PrintDefaults()
}

// configFiles names every plugin's config file, as the agent's wiring
// lists them.
func configFiles() string {
	names := make([]string, 0, len(agentwiring.PluginConfigs))
	for _, file := range agentwiring.PluginConfigs {
		names = append(names, file.Name+".conf")
	}
	return strings.Join(names, ", ")
}
