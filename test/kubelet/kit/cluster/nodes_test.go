package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// TestTwoNodesEachRunTheirPodsThenStopLeavesNothing starts a cluster of
// two nodes and shows each is a node of its own: both Ready at their own
// address, a pod pinned to each runs there (kubectl exec reaches both
// kubelets), each kubelet has its own device-plugin registration socket,
// the added node's loopback is not the host's; Stop leaves no process,
// link or work dir.
func TestTwoNodesEachRunTheirPodsThenStopLeavesNothing(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Nodes: 2, Progress: testlog.Writer(t)})
	ctx := context.Background()
	client, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	added := c.Nodes()
	if len(added) != 1 || added[0].Name() != cluster.NodeName+"-2" {
		t.Fatalf("added nodes %v, want one named %s-2", added, cluster.NodeName)
	}
	second := added[0]
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addresses := map[string]string{}
	for _, node := range nodes.Items {
		for _, a := range node.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				addresses[node.Name] = a.Address
			}
		}
	}
	want := map[string]string{cluster.NodeName: c.NodeIP(), second.Name(): second.IP()}
	if fmt.Sprint(addresses) != fmt.Sprint(want) {
		t.Errorf("nodes' InternalIPs %v, want %v", addresses, want)
	}

	for _, host := range c.AllNodes() {
		pod := pinnedPod("on-"+host.Name(), host.Name())
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, host := range c.AllNodes() {
		name := "on-" + host.Name()
		poll.Until(t, 2*time.Minute, "pod "+name+" Running", func() error {
			got, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.Phase != v1.PodRunning {
				return fmt.Errorf("phase %s: %+v", got.Status.Phase, got.Status.ContainerStatuses)
			}
			return nil
		})
		if out, err := c.Kubectl(ctx, "logs", name); err != nil {
			t.Errorf("kubectl logs %s (the API server reaching %s's kubelet): %v: %s", name, host.Name(), err, out)
		}
		out, err := host.Ctr(ctx, "containers", "ls", "-q")
		if err != nil || strings.TrimSpace(out) == "" {
			t.Errorf("ctr containers ls on %s: %q, %v; want the pod's containers", host.Name(), out, err)
		}
	}

	registration := "/var/lib/kubelet/device-plugins/kubelet.sock"
	first, other := c.HostPath(registration), second.HostPath(registration)
	if first == other {
		t.Errorf("both nodes' kubelet registration sockets are %s", first)
	}
	for _, path := range []string{first, other} {
		if info, err := os.Stat(path); err != nil || info.Mode()&os.ModeSocket == 0 {
			t.Errorf("kubelet registration socket %s: %v", path, err)
		}
	}

	// The added node's loopback is its own: a listener on it is not the
	// host's.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	if conn, err := second.DialContext(ctx, "tcp", listener.Addr().String()); err == nil {
		conn.Close()
		t.Errorf("node %s reached the host's loopback listener %s", second.Name(), listener.Addr())
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
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	if prefix := "mc" + strings.TrimPrefix(filepath.Base(dir), "mc"); strings.Contains(string(links), prefix[:min(len(prefix), 12)]) {
		t.Errorf("links of the cluster after Stop:\n%s", links)
	}
}

func pinnedPod(name, node string) *v1.Pod {
	noToken := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeSelector:                 map[string]string{"kubernetes.io/hostname": node},
			AutomountServiceAccountToken: &noToken,
			Containers:                   []v1.Container{{Name: "main", Image: cluster.PauseImage, ImagePullPolicy: v1.PullNever}},
		},
	}
}
