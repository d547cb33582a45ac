package cluster_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// TestClientsetOutlivesItsClusterWithoutACertificateReloader checks that a
// client of the cluster, still held after the cluster stopped and its work
// dir went, runs no goroutine of client-go's client certificate rotation:
// one reloads the certificate every few seconds from the files a kubeconfig
// names, no one can stop it, and it logs "no such file" from then on in
// whatever runs next in the process.
func TestClientsetOutlivesItsClusterWithoutACertificateReloader(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{ControlPlaneOnly: true, Progress: testlog.Writer(t)})
	client, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the client reaches no API server: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if reloaders := certReloaders(); len(reloaders) > 0 {
		t.Errorf("%d goroutines of client-go's certificate rotation after the cluster stopped, want none:\n%s",
			len(reloaders), strings.Join(reloaders, "\n\n"))
	}
	runtime.KeepAlive(client) // a dropped client's reloader may stop when the GC takes its transport
}

// certReloaders returns the stacks of the goroutines of client-go's client
// certificate rotation (k8s.io/client-go/transport, cert_rotation.go).
func certReloaders() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for _, stack := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(stack, "transport.(*dynamicClientCert)") {
			found = append(found, stack)
		}
	}
	return found
}
