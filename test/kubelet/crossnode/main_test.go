package crossnode

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// controlPlane is the suite's one control plane, started by the first
// test that needs it and stopped by TestMain.
var controlPlane struct {
	once    sync.Once
	cluster *cluster.Cluster
	client  kubernetes.Interface
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if c := controlPlane.cluster; c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop the control plane: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// apiServer returns a cluster-admin client of the suite's control plane.
func apiServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	needs.Root(t, "a control plane (etcd, kube-apiserver, kube-controller-manager)")
	controlPlane.once.Do(func() {
		c, err := cluster.Start(context.Background(), cluster.Options{ControlPlaneOnly: true, Progress: os.Stderr})
		if err != nil {
			controlPlane.err = err
			return
		}
		controlPlane.cluster = c
		controlPlane.client, controlPlane.err = c.Clientset()
	})
	if controlPlane.err != nil {
		t.Fatal(controlPlane.err)
	}
	return controlPlane.client
}

// testNamespace creates a namespace for t, deleted when t ends.
func testNamespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crossnode-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// createNodes creates n Node objects named after t, deleted when t ends.
func createNodes(t *testing.T, client kubernetes.Interface, n int) []string {
	t.Helper()
	ctx := context.Background()
	prefix := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	names := make([]string, n)
	for i := range names {
		node, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names[i] = node.Name
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}) })
	}
	return names
}
