package manager_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// BenchmarkAllocate measures kubelet's view of Allocate for one device
// (gRPC, event loop, directory, secret, checkpoint fsync) against a bare
// gRPC round trip on the same socket, measured in the same run: compare the
// two with benchstat or by their ratio. Each allocation is released outside
// the timer so that devices never run out.
func BenchmarkAllocate(b *testing.B) {
	a := startAgent(b, testConfig(b), nil)
	ctx := context.Background()

	b.Run("baseline-grpc-round-trip", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.kubelet.GetDevicePluginOptions(ctx, &pluginapi.Empty{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("allocate-one-device", func(b *testing.B) {
		latencies := make([]time.Duration, 0, 1024)
		pod := podapi.Pod{ID: podapi.PodID{Namespace: "bench", Name: "pod"}, UID: "u"}
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			response, err := allocate(a, []string{"memif-000"})
			latencies = append(latencies, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			evidence := podapi.PodContainer{Name: "c", MountSources: []string{response.ContainerResponses[0].Mounts[0].HostPath}}
			push(b, a, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{evidence}})
			push(b, a, &podapi.DeletePod{Pod: pod})
			b.StartTimer()
		}
		reportPercentiles(b, latencies)
	})
}

// BenchmarkGetPodMemifInfo reads one pod's memif among 256 bound
// allocations, from parallel goroutines, as sibling plugins do.
func BenchmarkGetPodMemifInfo(b *testing.B) {
	cfg := testConfig(b)
	cfg.DeviceCount = 256
	a := startAgent(b, cfg, nil)
	for i := 0; i < 256; i++ {
		response, err := allocate(a, []string{fmt.Sprintf("memif-%03d", i)})
		if err != nil {
			b.Fatal(err)
		}
		pod := podapi.Pod{ID: podapi.PodID{Namespace: "bench", Name: fmt.Sprint("pod-", i)}, UID: fmt.Sprint(i)}
		evidence := podapi.PodContainer{Name: "c", MountSources: []string{response.ContainerResponses[0].Mounts[0].HostPath}}
		if err := a.loop.PushEvent(&podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{evidence}}); err != nil {
			b.Fatal(err)
		}
	}
	push(b, a, &podapi.AddPod{})
	target := podapi.PodID{Namespace: "bench", Name: "pod-128"}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.dm.GetPodMemifInfo(target); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func reportPercentiles(b *testing.B, latencies []time.Duration) {
	if len(latencies) == 0 {
		return
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
}
