package nodedemo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// Options configure Run.
type Options struct {
	// BinDir holds memifctl (make build).
	BinDir string
	// Pods is how many memif pods to run.
	Pods int
	// StepTimeout bounds each waiting step.
	StepTimeout time.Duration
	// Runtime is the node's runtime (default containerd 2.x).
	Runtime cluster.Runtime
	Out     io.Writer
}

// Run runs the demo and tears everything down before it returns.
func Run(ctx context.Context, opts Options) (err error) {
	r := reporter{out: opts.Out}
	c, err := cluster.Start(ctx, cluster.Options{Runtime: opts.Runtime, Progress: prefixWriter{r, "cluster"}, OwnSignals: true})
	if err != nil {
		return err
	}
	defer func() {
		r.step("teardown", "stopping the cluster and removing its work dir")
		err = errors.Join(err, c.Stop())
	}()
	versions := c.Versions()
	r.step("peers", "kubernetes %s, etcd %s, %s, runc %s", versions["kubernetes"], versions["etcd"], versions["runtime"], versions["runc"])

	n, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: opts.BinDir, Progress: func(f string, a ...any) { r.step("deploy", f, a...) }})
	if err != nil {
		return err
	}
	if err := waitFor(ctx, opts.StepTimeout, func() error { return n.DaemonSetReady(ctx) }); err != nil {
		return fmt.Errorf("daemonset memif-agent never became Ready: %w", err)
	}
	var allocatable int64
	if err := waitFor(ctx, opts.StepTimeout, func() error {
		a, _, err := n.Allocatable(ctx)
		allocatable = a
		if err == nil && a == 0 {
			err = errors.New("node has no contivpp.io/memif allocatable yet")
		}
		return err
	}); err != nil {
		return err
	}
	r.step("agent", "daemonset memif-agent Ready; node %s allocatable contivpp.io/memif: %d", cluster.NodeName, allocatable)

	names := make([]string, opts.Pods)
	for i := range names {
		names[i] = fmt.Sprintf("memif-%c", 'a'+i)
		if _, err := n.CreatePod(ctx, memifnode.MemifPod("default", names[i])); err != nil {
			return err
		}
	}
	links := make([]memifnode.Link, len(names))
	for i, name := range names {
		if err := waitFor(ctx, opts.StepTimeout, func() error { _, err := n.PodRunning(ctx, "default", name); return err }); err != nil {
			return err
		}
		if links[i], err = n.PodLink(ctx, "default", name); err != nil {
			return err
		}
		r.step("pod", "%s Running: MEMIF_SOCKET=%s, secret %d chars, %s mounted; allocation %s, device %s",
			name, links[i].Socket, len(links[i].Secret), filepath.Dir(links[i].Socket), links[i].Allocation.AllocationID, strings.Join(links[i].Allocation.DeviceIDs, ","))
	}
	if err := r.show(ctx, c, n); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "memif-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	switches := make([]*testpmd.Vswitch, len(links))
	defer func() {
		for _, sw := range switches {
			if sw != nil {
				_ = sw.Stop()
			}
		}
	}()
	var rows []row
	for i, link := range links {
		begin := time.Now()
		stepCtx, cancel := context.WithTimeout(ctx, opts.StepTimeout)
		switches[i], err = n.StartVswitch(stepCtx, link, filepath.Join(dir, link.Pod+".log"))
		if err == nil {
			err = switches[i].WaitLinkUp(stepCtx)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("pod %s: vswitch side: %w", link.Pod, err)
		}
		rows = append(rows, row{pod: link.Pod, socket: link.Allocation.HostSocket, upAfter: time.Since(begin)})
	}
	for i := range rows {
		rows[i].pps, err = switches[i].RxRate(ctx, time.Second)
		if err != nil {
			return err
		}
		stats, err := switches[i].Stats(ctx)
		if err != nil {
			return err
		}
		rows[i].rx = stats.RxPackets
	}
	r.step("traffic", "every memif link, vswitch side on the host:\n%s", table(rows))

	first := links[0]
	if err := switches[0].Stop(); err != nil {
		return err
	}
	switches[0] = nil
	if err := n.DeletePod(ctx, "default", first.Pod); err != nil {
		return err
	}
	if err := waitFor(ctx, opts.StepTimeout, func() error { return n.Released(ctx, first.Allocation) }); err != nil {
		return fmt.Errorf("pod %s deleted, but: %w", first.Pod, err)
	}
	r.step("delete", "pod %s deleted: allocation %s released, %s removed", first.Pod, first.Allocation.AllocationID, filepath.Dir(first.Allocation.HostSocket))
	for i := 1; i < len(switches); i++ {
		up, err := switches[i].LinkUp(ctx)
		if err != nil || !up {
			return fmt.Errorf("pod %s: link down after deleting %s: %v", links[i].Pod, first.Pod, err)
		}
	}
	r.step("delete", "the other %d links stay up", len(switches)-1)
	return r.show(ctx, c, n)
}

// waitFor calls check every 200ms until it returns nil, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// reporter prints one line per step.
type reporter struct{ out io.Writer }

func (r reporter) step(phase, format string, args ...any) {
	fmt.Fprintf(r.out, "%-9s %s\n", phase, fmt.Sprintf(format, args...))
}

// show prints what kubectl and memifctl show.
func (r reporter) show(ctx context.Context, c *cluster.Cluster, n *memifnode.Node) error {
	pods, err := c.Kubectl(ctx, "get", "pods", "-A", "-o", "wide")
	if err != nil {
		return err
	}
	r.step("kubectl", "get pods -A -o wide:\n%s", strings.TrimRight(pods, "\n"))
	list, err := n.MemifctlText(ctx, "list")
	if err != nil {
		return err
	}
	r.step("memifctl", "list:\n%s", strings.TrimRight(list, "\n"))
	return nil
}

// prefixWriter turns the cluster's progress lines into steps.
type prefixWriter struct {
	r     reporter
	phase string
}

func (w prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.r.step(w.phase, "%s", strings.TrimPrefix(line, "cluster: "))
	}
	return len(p), nil
}

type row struct {
	pod, socket string
	upAfter     time.Duration
	pps         float64
	rx          uint64
}

func table(rows []row) string {
	sort.Slice(rows, func(i, j int) bool { return rows[i].pod < rows[j].pod })
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tHOST SOCKET (node)\tLINK\tPPS\tRX PACKETS\tLINK UP IN")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\tup\t%.0f\t%d\t%s\n", r.pod, r.socket, r.pps, r.rx, r.upAfter.Round(time.Millisecond))
	}
	w.Flush()
	return strings.TrimRight(b.String(), "\n")
}
