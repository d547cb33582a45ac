// Package kubeclient makes the agent's API server clients: from the
// kubeconfig file a plugin's config names, or the pod's service account
// when it names none.
package kubeclient

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/contivpp/memif-agent/internal/configfile"
)

// QPS and Burst bound a client's requests to the API server, as kubelet's
// own defaults (kube-api-qps, kube-api-burst) bound kubelet's. kubelet's
// DRA plugin library reads each claim kubelet prepares with the DRA
// driver's client before it answers kubelet: client-go's defaults (5 per
// second, bursts of 10) would hold a burst of pods' preparations back by a
// fifth of a second each past the tenth.
const (
	QPS   = 50
	Burst = 100
)

// New returns a client from kubeconfig, or in-cluster when it is empty.
func New(kubeconfig string) (kubernetes.Interface, error) {
	var restConfig *rest.Config
	var err error
	if kubeconfig == "" {
		restConfig, err = rest.InClusterConfig()
	} else if err = configfile.CheckFile(kubeconfig); err == nil {
		// client-go reads the file whole and blocks on a FIFO: it gets
		// only a file a config file may be.
		restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("API server client (kubeconfig %q; empty means in-cluster): %w", kubeconfig, err)
	}
	restConfig.QPS, restConfig.Burst = QPS, Burst
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("API server client: %w", err)
	}
	return client, nil
}
