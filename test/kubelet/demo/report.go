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
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-64s %-5s %12s %14s\n", "POD", "HOST SOCKET", "LINK", "PPS", "RX PACKETS")
	for _, r := range results {
		link := "down"
		if r.LinkUp {
			link = "up"
		}
		fmt.Fprintf(&b, "%-10s %-64s %-5s %12.0f %14d\n", r.Pod, r.HostSocket, link, r.PacketsPerSec, r.RxPackets)
	}
	return strings.TrimRight(b.String(), "\n")
}
