package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// BenchmarkPodCreateToRunning measures, on the real node, how long a pod
// takes from its creation to Running when its memif comes from a
// ResourceClaim (scheduler allocation, kubelet's NodePrepareResources, the
// CDI spec) and, as the baseline in the same run, from the extended
// resource (kubelet's device plugin Allocate). Each iteration makes one pod
// of each kind, alternating which goes first, and deletes them before the
// next. It reports the medians and their ratio (claim/extended).
func BenchmarkPodCreateToRunning(b *testing.B) {
	c := cluster.StartForTest(b, cluster.Options{})
	ctx := context.Background()
	client, err := c.Clientset()
	if err != nil {
		b.Fatal(err)
	}
	removeNewCDISpecs(b, "/var/run/cdi")
	cfg := config.Default()
	// The in-process agent has no pod source, so it never releases a
	// device plugin allocation (kubelet frees the device, the agent keeps
	// it): enough devices for every iteration.
	cfg.DeviceCount, cfg.ClaimDeviceCount = 64, 4
	a := startAgentWith(b, c, client, "/var/run/cdi", cfg)
	if out, err := c.Kubectl(ctx, "apply", "-f", "../../../k8s/dra/deviceclass.yaml", "-f", "../../../k8s/dra/resourceclaimtemplate.yaml"); err != nil {
		b.Fatalf("apply the DeviceClass and claim template: %v\n%s", err, out)
	}
	poll.Until(b, waitLimit, "the node's memifs published and allocatable", func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, cluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if quantity := node.Status.Allocatable["contivpp.io/memif"]; quantity.Value() != int64(cfg.DeviceCount) {
			return fmt.Errorf("allocatable memifs %v", quantity.String())
		}
		slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil || len(slices.Items) != 1 {
			return fmt.Errorf("slices %v, %v", slices, err)
		}
		return nil
	})
	var claimTimes, extendedTimes []time.Duration
	b.ResetTimer()
	for i := range b.N {
		kinds := []bool{true, false}
		if i%2 == 1 {
			kinds = []bool{false, true}
		}
		for _, claim := range kinds {
			elapsed := podToRunning(ctx, b, client, a, fmt.Sprintf("bench-%d-%v", i, claim), claim)
			if claim {
				claimTimes = append(claimTimes, elapsed)
			} else {
				extendedTimes = append(extendedTimes, elapsed)
			}
		}
	}
	b.StopTimer()
	claimMedian, extendedMedian := median(claimTimes), median(extendedTimes)
	b.ReportMetric(float64(claimMedian.Milliseconds()), "claim-ms/pod")
	b.ReportMetric(float64(extendedMedian.Milliseconds()), "extended-ms/pod")
	b.ReportMetric(float64(claimMedian)/float64(extendedMedian), "claim/extended")
}

// podToRunning creates a pause pod with one memif, returns how long it took
// to run, then deletes it and waits until it is gone and, for a claim, its
// memif released.
func podToRunning(ctx context.Context, b *testing.B, client kubernetes.Interface, a *agent, name string, claim bool) time.Duration {
	b.Helper()
	pod := podOf(name, cluster.PauseImage, nil, claim)
	start := time.Now()
	if _, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitRunning(ctx, b, client, name)
	elapsed := time.Since(start)
	var held []string
	for _, memif := range a.dm.ListAllocations() {
		if memif.Pod.Name == name {
			held = append(held, memif.HostDir)
		}
	}
	if err := client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	poll.Until(b, waitLimit, name+" gone and its memif released", func() error {
		if _, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			return errors.New("pod still there")
		}
		if claim {
			for _, dir := range held {
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("%s still there", dir)
				}
			}
		}
		return nil
	})
	return elapsed
}

func median(times []time.Duration) time.Duration {
	if len(times) == 0 {
		return 0
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}
