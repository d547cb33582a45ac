// Command memifctl shows what memif-agent has handed to pods on this node:
// the memif allocations with what each memif got from the node's networks
// (network, mode, addresses; the reason when one is refused), one pod's
// memifs, a live stream of allocation changes, and the agent's controller
// event history. It talks to the
// agent's node-local gRPC API on its Unix socket and changes nothing.
//
//	memifctl list
//	memifctl get NAMESPACE/POD
//	memifctl watch
//	memifctl events [--since SEQ] [--last N]
//
// Output is a table by default, or JSON with -o json. Secrets are shown only
// with --show-secrets.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
