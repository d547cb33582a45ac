package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/namsral/flag"

	"github.com/contivpp/memif-agent/plugins/health/probesocket"
)

// probeCommand, as the first argument, makes memif-agent the client of a
// running agent's probes: kubelet's exec probes run
// `memif-agent probe liveness` and `memif-agent probe readiness` in the
// agent's container.
const probeCommand = "probe"

// defaultProbeTimeout bounds one probe; the DaemonSet's timeoutSeconds
// must be longer, so that the probe reports why it failed before kubelet
// gives up on it.
const defaultProbeTimeout = 2 * time.Second

// probePaths are the probes by the name the command takes.
var probePaths = map[string]string{
	"liveness":  probesocket.LivenessPath,
	"readiness": probesocket.ReadinessPath,
}

// runProbe asks the probe args name over the probe socket and returns the
// exit status: 0 when it passed, 1 when it failed or nothing answered, 2
// for a bad command line. The agent's answer goes to stdout (kubelet keeps
// it in the probe's event); why it failed, to stderr.
func runProbe(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("memif-agent probe", flag.ContinueOnError)
	flags.SetOutput(stderr)
	socket := flags.String("socket", probesocket.DefaultPath, "Probe socket of the agent (health.conf's probe-socket)")
	timeout := flags.Duration("timeout", defaultProbeTimeout, "How long to wait for the answer")
	flags.Usage = func() {
		fmt.Fprint(stderr, `memif-agent probe asks a running memif-agent's liveness or readiness on its
probe socket, as kubelet's exec probes do. It exits 0 when the probe passed,
1 when it failed or the agent did not answer, printing the agent's answer.
The socket lets only root in.

Usage: memif-agent probe [flags] liveness|readiness

Flags:
`)
		flags.PrintDefaults()
	}
	if code, done := parseSubcommandFlags(flags, args); done {
		return code
	}
	urlPath, known := probePaths[flags.Arg(0)]
	if flags.NArg() != 1 || !known {
		fmt.Fprintf(stderr, "memif-agent probe: want one probe, liveness or readiness, got %q\n", flags.Args())
		flags.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	answer, err := probesocket.Ask(ctx, *socket, urlPath)
	if err != nil {
		fmt.Fprintf(stderr, "memif-agent %v\n", err)
		return 1
	}
	stdout.Write(answer.Body)
	if !answer.Passed() {
		fmt.Fprintf(stderr, "memif-agent probe: %s failed: the agent answered %d\n", flags.Arg(0), answer.Code)
		return 1
	}
	return 0
}

// parseSubcommandFlags parses a subcommand's flags; when done, the
// subcommand exits with code: 0 after -help, 2 after a bad flag (the flag
// package has said why).
func parseSubcommandFlags(flags *flag.FlagSet, args []string) (code int, done bool) {
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}
