package benchmarks

import (
	"context"
	"fmt"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

// memoryAllocations is how many allocations the agent holds when its
// memory is read; each has its own directory, secret and checkpoint entry.
const memoryAllocations = 1000

// settleTime lets the agent finish what its start or the last call set off
// (registration retries, checkpoint writes) before its memory is read.
const settleTime = 500 * time.Millisecond

// BenchmarkAgentMemory measures the agent's resident memory (VmRSS) while
// it holds 1,000 allocations, each made by one Allocate call on its device
// plugin socket as kubelet makes them; the baseline is the same agent just
// started and idle, read before the calls. Every iteration is a fresh
// agent with empty state. Reported: both in MiB (median of the
// iterations) and their ratio.
func BenchmarkAgentMemory(b *testing.B) {
	var idle, loaded []float64
	for b.Loop() {
		a := newAgent(b, agenttest.Setup{DeviceCount: memoryAllocations})
		a.Start()
		time.Sleep(settleTime)
		idle = append(idle, a.RSSMiB())
		allocateAll(b, a)
		time.Sleep(settleTime)
		loaded = append(loaded, a.RSSMiB())
		a.Stop()
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(loaded), "rss-1000-MiB")
	b.ReportMetric(median(idle), "rss-idle-MiB")
	b.ReportMetric(median(loaded)/median(idle), "rss-1000/idle")
}

// allocateAll makes memoryAllocations allocations of one device each and
// checks that the agent lists them all.
func allocateAll(b *testing.B, a *agenttest.Agent) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	plugin := a.PluginClient()
	for i := range memoryAllocations {
		request := &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
			{DevicesIds: []string{fmt.Sprintf("memif-%03d", i)}},
		}}
		if _, err := plugin.Allocate(ctx, request); err != nil {
			b.Fatalf("Allocate %d of %d: %v", i+1, memoryAllocations, err)
		}
	}
	if got := len(allocations(b, ctx, a.APIClient())); got != memoryAllocations {
		b.Fatalf("the agent lists %d allocations after %d Allocate calls", got, memoryAllocations)
	}
}
