package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

func TestNodeBecomesReadyAndRunsAPodThenStopLeavesNothing(t *testing.T) {
	for _, runtime := range []cluster.Runtime{cluster.Containerd, cluster.DebianContainerd} {
		t.Run(string(runtime), func(t *testing.T) {
			c := cluster.StartForTest(t, cluster.Options{Runtime: runtime, Progress: testlog.Writer(t)})
			ctx := context.Background()
			client, err := c.Clientset()
			if err != nil {
				t.Fatal(err)
			}
			noToken := false
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"},
				Spec: v1.PodSpec{
					AutomountServiceAccountToken: &noToken,
					Containers:                   []v1.Container{{Name: "main", Image: cluster.PauseImage, ImagePullPolicy: v1.PullNever}},
				},
			}
			if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, 2*time.Minute, "pod default/plain Running", func() error {
				got, err := client.CoreV1().Pods("default").Get(ctx, "plain", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if got.Status.Phase != v1.PodRunning {
					return fmt.Errorf("phase %s: %+v", got.Status.Phase, got.Status.ContainerStatuses)
				}
				return nil
			})
			out, err := c.Kubectl(ctx, "get", "pod", "plain", "-o", "jsonpath={.status.phase}")
			if err != nil || out != "Running" {
				t.Fatalf("kubectl get pod plain: %q, %v", out, err)
			}

			if mounts := mountsAt(t, c, "/var/lib/kubelet"); len(mounts) != 1 {
				t.Errorf("mounts at /var/lib/kubelet on the node: %q; want the one bind, shared, that kubelet does not mount over at start", mounts)
			}

			dir := c.Dir()
			if err := c.Stop(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("work dir %s after Stop: %v; want it removed", dir, err)
			}
			if leftovers := processesUnder(dir); len(leftovers) > 0 {
				t.Errorf("processes naming %s after Stop: %v", dir, leftovers)
			}
		})
	}
}

// mountsAt returns the node's mountinfo lines whose mount point is path.
func mountsAt(t *testing.T, c *cluster.Cluster, path string) []string {
	t.Helper()
	argv := c.NodeArgv("cat", "/proc/self/mountinfo")
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("read the node's mountinfo: %v", err)
	}
	var mounts []string
	for _, line := range strings.Split(string(out), "\n") {
		if fields := strings.Fields(line); len(fields) > 4 && fields[4] == path {
			mounts = append(mounts, line)
		}
	}
	return mounts
}

// processesUnder lists the command lines of processes whose command line
// names something under dir.
func processesUnder(dir string) []string {
	var found []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmdline, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), dir) {
			found = append(found, string(cmdline))
		}
	}
	return found
}
