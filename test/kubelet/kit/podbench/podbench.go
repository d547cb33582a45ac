package podbench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// CreateToRunning creates pod and returns how long until a watch saw it
// Running. The caller deletes it, also after an error.
func CreateToRunning(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) (time.Duration, error) {
	_, elapsed, err := CreateUntilRunning(ctx, client, pod)
	return elapsed, err
}

// CreateUntilRunning creates pod and returns it as a watch saw it Running
// (with its UID and status), and how long that took from the creation; it
// returns as soon as the watch reports Running. The caller deletes it,
// also after an error.
func CreateUntilRunning(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) (*v1.Pod, time.Duration, error) {
	pods := client.CoreV1().Pods(pod.Namespace)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
	if err != nil {
		return nil, 0, fmt.Errorf("podbench: watch pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer w.Stop()
	start := time.Now()
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, 0, fmt.Errorf("podbench: create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	for event := range w.ResultChan() {
		if p, ok := event.Object.(*v1.Pod); ok && p.Status.Phase == v1.PodRunning {
			return p, time.Since(start), nil
		}
	}
	return nil, 0, fmt.Errorf("podbench: pod %s/%s: watch ended before Running: %w", pod.Namespace, pod.Name, ctx.Err())
}

// Kinds name the two kinds of pods Compare measures, in its metrics.
type Kinds struct {
	Subject, Baseline string
}

// Compare runs b.N iterations of one pod of each kind, alternating which
// goes first, measure timing one (subject true: of the subject kind), and
// reports the medians as "<kind>-ms/pod" and their ratio as
// "<subject>/<baseline>". Run it with -benchtime=20x or more for medians
// over ≥ 20 pods of each kind.
func Compare(b *testing.B, kinds Kinds, measure func(i int, subject bool) time.Duration) {
	b.Helper()
	var subjectTimes, baselineTimes []time.Duration
	b.ResetTimer()
	for i := range b.N {
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, subject := range order {
			elapsed := measure(i, subject)
			if subject {
				subjectTimes = append(subjectTimes, elapsed)
			} else {
				baselineTimes = append(baselineTimes, elapsed)
			}
		}
	}
	b.StopTimer()
	subjectMedian, baselineMedian := Median(subjectTimes), Median(baselineTimes)
	b.ReportMetric(float64(subjectMedian.Milliseconds()), kinds.Subject+"-ms/pod")
	b.ReportMetric(float64(baselineMedian.Milliseconds()), kinds.Baseline+"-ms/pod")
	b.ReportMetric(float64(subjectMedian)/float64(baselineMedian), kinds.Subject+"/"+kinds.Baseline)
}

// Median returns the median of times (the upper one of an even count), 0
// for none.
func Median(times []time.Duration) time.Duration {
	if len(times) == 0 {
		return 0
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}
