// Package kubelettest runs the kubelet's own device manager
// (k8s.io/kubernetes/pkg/kubelet/cm/devicemanager) and its pod-resources
// server inside a test process, so that device plugins are proven against
// the code the kubelet runs, not against a model of it.
//
// The device manager serves its registration socket at the fixed path
// /var/lib/kubelet/device-plugins/kubelet.sock: v1.37.0 keeps the socket
// path of newManagerImpl unexported, and building the registration server
// separately (plugin/v1beta1.NewServer) would leave out the manager's own
// wiring, which is what the tests are about. So Main re-executes the test
// binary in a private mount namespace with a fresh temporary directory
// bind-mounted over /var/lib/kubelet: the tests need root, and they neither
// see nor disturb a kubelet that may run on the machine.
//
// The package owns the kubelet side only: the fake pod list that stands in
// for the kubelet's pod manager (PodList), the admission sequence
// (Allocate, then GetDeviceRunContainerOptions, as the kubelet and its
// runtime do), kubelet restarts, and kubelet's reference stub plugin as a
// baseline. It must not know about the plugin under test.
package kubelettest
