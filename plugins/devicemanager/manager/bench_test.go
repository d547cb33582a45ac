package manager_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
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
		reportPercentiles(b, allocateLatencies(b, a))
	})
}

// allocateLatencies times kubelet's Allocate of one device b.N times,
// releasing each allocation (its pod bound, then deleted) outside the
// timer.
func allocateLatencies(b *testing.B, a *agent) []time.Duration {
	latencies := make([]time.Duration, 0, 1024)
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "bench", Name: "pod"}, UID: "u"}
	for b.Loop() {
		start := time.Now()
		response, err := allocate(a, []string{"memif-000"})
		latencies = append(latencies, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bindAndRelease(b, a, pod, response)
		b.StartTimer()
	}
	return latencies
}

// BenchmarkAllocateBesideFlood measures Allocate, as BenchmarkAllocate
// does, pushed right behind the release of another pod's directory that
// holds floodFiles files, against the same behind the release of an empty
// directory, in the same run: p50-ratio (flood against empty) is the
// figure, 1 when the flood delays no one but its pod. The released
// directory is made and filled outside the timer, and its files made
// durable there too (syncfs): a pod's files are long committed when it is
// deleted, and otherwise ext4's one journal commits them with the
// checkpoint's fsync inside the timer.
func BenchmarkAllocateBesideFlood(b *testing.B) {
	a := startAgent(b, testConfig(b), nil)
	var empty []time.Duration
	b.Run("behind-empty", func(b *testing.B) {
		empty = allocateBehindRelease(b, a, 0)
		reportPercentiles(b, empty)
	})
	b.Run("behind-flood", func(b *testing.B) {
		flooded := allocateBehindRelease(b, a, floodFiles)
		reportPercentiles(b, flooded)
		if len(empty) > 0 && len(flooded) > 0 {
			b.ReportMetric(float64(percentile(flooded, 50))/float64(percentile(empty, 50)), "p50-ratio")
		}
	})
}

// allocateBehindRelease times b.N Allocates of one device, each pushed
// right behind the release of a directory holding files files.
func allocateBehindRelease(b *testing.B, a *agent, files int) []time.Duration {
	latencies := make([]time.Duration, 0, 64)
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "bench", Name: "pod"}, UID: "u"}
	for b.Loop() {
		b.StopTimer()
		response, err := allocate(a, []string{"memif-007"})
		if err != nil {
			b.Fatal(err)
		}
		released := response.ContainerResponses[0].Mounts[0].HostPath
		if err := flood(released, files); err != nil {
			b.Fatal(err)
		}
		if err := syncFilesystem(released); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := a.loop.PushEvent(&manager.ReleaseAllocation{AllocationID: filepath.Base(released), Reason: "benchmark"}); err != nil {
			b.Fatal(err)
		}
		response, err = allocate(a, []string{"memif-000"})
		latencies = append(latencies, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bindAndRelease(b, a, pod, response)
		b.StartTimer()
	}
	return latencies
}

// syncFilesystem commits what was written to the filesystem holding dir.
func syncFilesystem(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
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
	b.ReportMetric(float64(percentile(latencies, 50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(latencies, 99).Microseconds()), "p99-µs")
}

// percentile is the p-th percentile of latencies, which it sorts.
func percentile(latencies []time.Duration, p int) time.Duration {
	slices.Sort(latencies)
	return latencies[len(latencies)*p/100]
}

// bindAndRelease binds the allocation response answered to pod, then
// deletes the pod, so that the next Allocate finds its device free.
func bindAndRelease(b *testing.B, a *agent, pod podapi.Pod, response *pluginapi.AllocateResponse) {
	b.Helper()
	evidence := podapi.PodContainer{Name: "c", MountSources: []string{response.ContainerResponses[0].Mounts[0].HostPath}}
	push(b, a, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{evidence}})
	push(b, a, &podapi.DeletePod{Pod: pod})
}
