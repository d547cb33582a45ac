package demo

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// reporter prints one short line per step.
type reporter struct {
	out io.Writer
}

func (r reporter) step(phase, format string, args ...any) {
	fmt.Fprintf(r.out, "%-9s %s\n", phase, fmt.Sprintf(format, args...))
}

// PodResult is what one pod's memif showed.
type PodResult struct {
	Pod           string
	HostSocket    string
	LinkUp        bool
	LinkUpAfter   time.Duration
	RxPackets     uint64
	PacketsPerSec float64
}

// table renders the results as aligned columns.
func table(results []PodResult) string {
	socketWidth := len("HOST SOCKET")
	for _, r := range results {
		socketWidth = max(socketWidth, len(r.HostSocket))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-*s %-4s %11s %12s %10s\n", "POD", socketWidth, "HOST SOCKET", "LINK", "PPS", "RX PACKETS", "LINK UP IN")
	for _, r := range results {
		link := "down"
		if r.LinkUp {
			link = "up"
		}
		fmt.Fprintf(&b, "%-8s %-*s %-4s %11.0f %12d %10s\n", r.Pod, socketWidth, r.HostSocket, link, r.PacketsPerSec, r.RxPackets, r.LinkUpAfter.Round(time.Millisecond))
	}
	return strings.TrimRight(b.String(), "\n")
}
