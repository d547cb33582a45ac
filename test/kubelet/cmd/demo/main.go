// Command demo is `make demo`: memif-agent on a real single-node cluster
// built here (kubelet on containerd, API server, scheduler, controllers)
// next to the node's VPP, installed with the Helm chart (helm install,
// deploy/helm/memif-agent/ci/vpp-values.yaml), two
// networks: pods passing DPDK memif traffic to each other through VPP's
// bridge domain (l2 network pods), and pods running VPP pinging each other
// and their gateway through VPP (l3 network red); a pod deleted and its
// memif gone from VPP and released; one line per step, and everything
// removed at the end (also on Ctrl-C or failure). With --nodes 2 or more,
// each node has its own VPP and agent, and the networks span the nodes: a
// VPP pod of red on each added node pings one on the first node across
// the underlay. See package nodedemo.
//
// It needs root, the peers of scripts/peers.sh and VPP (make demo builds
// them; scripts/vpp.sh).
//
//	demo --bin ../../bin [--pods 3] [--nodes 2] [--runtime containerd|debian-containerd]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/nodedemo"
)

func main() {
	os.Exit(run())
}

func run() int {
	bin := flag.String("bin", "bin", "directory holding memifctl (make build)")
	pods := flag.Int("pods", 3, "how many testpmd pods request a memif in the l2 network: the first sends, the others receive")
	runtime := flag.String("runtime", string(cluster.Containerd), "the node's runtime: containerd (2.x, scripts/peers.sh) or debian-containerd (1.6)")
	nodes := flag.Int("nodes", 1, "how many nodes: the first runs the l2 and l3 pods, each added one its own VPP and agent and a memif pod")
	stepTimeout := flag.Duration("step-timeout", 3*time.Minute, "bound on each waiting step")
	flag.Parse()
	if *nodes < 1 || *nodes > 8 {
		fmt.Fprintln(os.Stderr, "demo: --nodes must be 1..8")
		return 2
	}
	if *pods < 2 || *pods > 26 {
		fmt.Fprintln(os.Stderr, "demo: --pods must be 2..26")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := nodedemo.Run(ctx, nodedemo.Options{
		BinDir: *bin, Pods: *pods, StepTimeout: *stepTimeout, Runtime: cluster.Runtime(*runtime), Nodes: *nodes, Out: os.Stdout,
	})
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "demo: interrupted; everything it started was stopped")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	return 0
}
