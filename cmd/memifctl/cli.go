package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const usageText = `memifctl shows the memif interfaces memif-agent has handed to pods on this node.

Usage:
  memifctl [flags] list                    every memif allocation, its network, mode and addresses
  memifctl [flags] get NAMESPACE/POD       the memifs of one pod, and why any is not wired
  memifctl [flags] watch                   allocation changes as they happen (Ctrl-C to stop)
  memifctl [flags] events [--since SEQ] [--last N]
                                           the agent's controller event history

Flags may come before or after the command.

Flags:
`

// options are the command-line flags.
type options struct {
	socket      string
	output      string
	showSecrets bool
	sinceSeq    uint64
	last        uint
}

// errUsage marks errors that are the caller's mistake on the command line.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	command, positional, opts, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err == nil {
		err = dispatch(ctx, command, positional, opts, stdout)
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "memifctl: %v\nRun 'memifctl -h' for usage.\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "memifctl: %v\n", err)
		return exitError
	}
}

func newFlagSet(opts *options, stderr io.Writer) *flag.FlagSet {
	flags := flag.NewFlagSet("memifctl", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.StringVar(&opts.socket, "socket", memifv1.DefaultSocketPath, "memif-agent API socket")
	flags.StringVar(&opts.output, "o", "table", "output format: table or json")
	flags.BoolVar(&opts.showSecrets, "show-secrets", false, "show memif secrets (hidden by default)")
	flags.Uint64Var(&opts.sinceSeq, "since", 0, "events: only events after this sequence number")
	flags.UintVar(&opts.last, "last", 0, "events: only the newest N events (0: all)")
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), usageText)
		flags.PrintDefaults()
	}
	return flags
}

// parseArgs accepts flags anywhere on the command line.
func parseArgs(args []string, stderr io.Writer) (string, []string, options, error) {
	var opts options
	flags := newFlagSet(&opts, stderr)
	var words []string
	for {
		if err := flags.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", nil, opts, err
			}
			return "", nil, opts, fmt.Errorf("%w: %v", errUsage, err)
		}
		if flags.NArg() == 0 {
			break
		}
		words = append(words, flags.Arg(0))
		args = flags.Args()[1:]
	}
	if len(words) == 0 {
		return "", nil, opts, fmt.Errorf("%w: no command given", errUsage)
	}
	if opts.output != "table" && opts.output != "json" {
		return "", nil, opts, fmt.Errorf("%w: unknown output format %q: want table or json", errUsage, opts.output)
	}
	return words[0], words[1:], opts, nil
}

// command is one memifctl command and how many arguments it takes.
type command struct {
	args int
	run  func(context.Context, *client, []string, options, io.Writer) error
}

var commands = map[string]command{
	"list":   {args: 0, run: listCommand},
	"get":    {args: 1, run: getCommand},
	"watch":  {args: 0, run: watchCommand},
	"events": {args: 0, run: eventsCommand},
}

func dispatch(ctx context.Context, name string, args []string, opts options, stdout io.Writer) error {
	cmd, ok := commands[name]
	if !ok {
		return fmt.Errorf("%w: unknown command %q", errUsage, name)
	}
	if len(args) != cmd.args {
		return fmt.Errorf("%w: %s takes %d argument(s), got %d: %q", errUsage, name, cmd.args, len(args), args)
	}
	if name != "events" && (opts.sinceSeq != 0 || opts.last != 0) {
		return fmt.Errorf("%w: --since and --last apply only to the events command", errUsage)
	}
	c, err := dial(opts.socket)
	if err != nil {
		return err
	}
	defer c.Close()
	return cmd.run(ctx, c, args, opts, stdout)
}
