package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/contivpp/memif-agent/internal/inprocess"
	dmplugin "github.com/contivpp/memif-agent/plugins/devicemanager"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/dradriver"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/plugins/podmanager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

const (
	waitLimit = 3 * time.Minute
	namespace = "default"
	podImage  = "memif-testpmd:dra"
)

// startCluster starts a cluster for tb with the chart's DeviceClass and
// the claim template of k8s/dra applied. containerd reads CDI specs from /var/run/cdi
// (its default), a private node path of the cluster: no other cluster's
// specs or watches meet there.
func startCluster(tb testing.TB, opts cluster.Options) (*cluster.Cluster, kubernetes.Interface) {
	tb.Helper()
	c, client := startChartCluster(tb, opts)
	if err := memifnode.ApplyChartTemplates(context.Background(), c, []string{"templates/deviceclass.yaml"}, "--set", "dra.enabled=true"); err != nil {
		tb.Fatalf("apply the chart's DeviceClass: %v", err)
	}
	return c, client
}

// startChartCluster is startCluster for the cases that install the chart
// with dra.enabled: its release makes and owns the DeviceClass, and helm
// refuses to install over one it does not own.
func startChartCluster(tb testing.TB, opts cluster.Options) (*cluster.Cluster, kubernetes.Interface) {
	tb.Helper()
	c := cluster.StartForTest(tb, opts)
	client, err := c.Clientset()
	if err != nil {
		tb.Fatal(err)
	}
	if out, err := c.Kubectl(context.Background(), "apply", "-f", "../../../k8s/dra/resourceclaimtemplate.yaml"); err != nil {
		tb.Fatalf("apply the claim template: %v\n%s", err, out)
	}
	return c, client
}

// agent is the agent in the test's process (inprocess, the wiring
// cmd/memif-agent runs) over the node's paths, its pod manager on the
// node's containerd and kubelet's pod-resources.
type agent struct{ *inprocess.Agent }

func startAgent(t testing.TB, c *cluster.Cluster, client kubernetes.Interface) *agent {
	t.Helper()
	return startAgentWith(t, c, client, claimsOnly(), nil)
}

// claimsOnly is the device manager's config of the suite: no device
// plugin, one claim device.
func claimsOnly() config.Config {
	cfg := config.Default()
	cfg.DevicePlugin, cfg.ClaimDeviceCount = false, 1
	return cfg
}

// startAgentWith runs the agent with cfg over the node's paths, the DRA
// driver on with client as its API server client, and waits until kubelet
// registered the driver; intercept, when set, wraps each of kubelet's gRPC
// calls to the driver and the device plugin.
func startAgentWith(t testing.TB, c *cluster.Cluster, client kubernetes.Interface, cfg config.Config, intercept grpc.UnaryServerInterceptor) *agent {
	t.Helper()
	a := runAgent(t, c, cfg, driverConfig(c, c.HostPath("/var/lib/kubelet/plugins_registry")),
		inprocess.Options{DRAClient: client, KubeletInterceptor: intercept})
	waitRegistered(t, a)
	return a
}

// waitRegistered waits until kubelet registered a's DRA driver.
func waitRegistered(t testing.TB, a *agent) {
	t.Helper()
	poll.Until(t, waitLimit, "kubelet registered the DRA driver", func() error {
		if !a.DRADriver.KubeletRegistered() {
			return errors.New("not yet")
		}
		return nil
	})
}

// driverConfig is dradriver.conf of the node, the driver on, registering
// in registrarDir.
func driverConfig(c *cluster.Cluster, registrarDir string) dradriver.Config {
	driver := dradriver.DefaultConfig()
	driver.Enabled, driver.NodeName, driver.Kubeconfig = true, cluster.NodeName, c.Kubeconfig()
	driver.PluginDataDir = c.HostPath("/var/lib/kubelet/plugins/" + claims.DefaultDriverName)
	driver.RegistrarDir = registrarDir
	driver.CDIDir = c.HostPath("/var/run/cdi")
	return driver
}

// startDriverOff runs the agent with cfg over the node's paths and the
// DRA driver off (dradriver.conf enabled: false).
func startDriverOff(t testing.TB, c *cluster.Cluster, cfg config.Config) *agent {
	t.Helper()
	return runAgent(t, c, cfg, dradriver.DefaultConfig(), inprocess.Options{})
}

// runAgent runs the agent with the device manager's cfg over the node's
// paths, the DRA driver's config driver, the node's pod sources, and the
// configs of other plugins opts gives.
func runAgent(t testing.TB, c *cluster.Cluster, cfg config.Config, driver dradriver.Config, opts inprocess.Options) *agent {
	t.Helper()
	cfg.PluginDir = c.HostPath("/var/lib/kubelet/device-plugins")
	cfg.SocketRoot = c.HostPath("/run/contiv/memif")
	cfg.CheckpointPath = c.HostPath("/var/lib/memif-agent/checkpoint.json")
	cfg.DeviceInfoDir = c.HostPath("/var/run/k8s.cni.cncf.io/devinfo/dp")
	pods := podmanager.DefaultConfig()
	pods.Runtime, pods.CRIEndpoint = podmanager.RuntimeCRI, c.RuntimeSocket()
	pods.PodResourcesSocket = c.HostPath("/var/lib/kubelet/pod-resources/kubelet.sock")
	configs := map[string]any{dmplugin.PluginName: cfg, dradriver.PluginName: driver, podmanager.PluginName: pods}
	maps.Copy(configs, opts.Configs)
	opts.Configs = configs
	return &agent{inprocess.Start(t, opts)}
}

func claimPod(name string) *corev1.Pod {
	return podOf(name, podImage, testpmd.PodCommand(), true)
}

// podOf is a pod asking for one memif through the claim template or, with
// claim false, the extended resource.
func podOf(name, image string, command []string, claim bool) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "memif-client", Image: image, ImagePullPolicy: corev1.PullNever, Command: command,
			}},
			TerminationGracePeriodSeconds: ptr.To(int64(2)),
		},
	}
	if claim {
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "memif", ResourceClaimTemplateName: ptr.To("memif")}}
		pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "memif"}}
	} else {
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceName(dmapi.DefaultResourceName): resource.MustParse("1")}
	}
	return pod
}

// TestClaimOnARealNode: a pod with a ResourceClaimTemplate is scheduled on
// the slice the driver published, kubelet prepares its claim, containerd
// applies the CDI device (env and mount), packets reach the vswitch side; a
// second pod waits Pending with the scheduler's reason while the node's one
// memif is taken; kubelet's and the agent's restarts lose nothing; deleting
// the pod unprepares the claim, the directory goes and the second pod gets
// the device.
func TestClaimOnARealNode(t *testing.T) {
	c, client := startCluster(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	image, err := testpmd.PodImage("docker.io/library/" + podImage)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ImportOCIImage(ctx, image); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, c, client)
	poll.Until(t, waitLimit, "the node's ResourceSlice", func() error {
		slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil || len(slices.Items) != 1 || len(slices.Items[0].Spec.Devices) != 1 {
			return fmt.Errorf("slices %v, %v", slices, err)
		}
		return nil
	})

	first := createPod(ctx, t, client, claimPod("memif-claim-1"))
	memif := podMemif(t, a, "memif-claim-1")
	vswitch, err := testpmd.StartVswitch(ctx, testpmd.VswitchConfig{Socket: memif.HostSocket, Secret: memif.Secret, LogPath: filepath.Join(t.TempDir(), "vswitch.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vswitch.Stop() })
	waitRunning(ctx, t, client, first.Name)
	checkCDIApplied(ctx, t, c, client, first.Name, memif)
	if err := vswitch.WaitLinkUp(ctx); err != nil {
		t.Fatalf("link: %v\n%s", err, vswitch.LogTail(20))
	}
	if _, err := vswitch.WaitReceiving(ctx); err != nil {
		t.Errorf("the vswitch receives no packets from the pod: %v", err)
	}

	second := createPod(ctx, t, client, claimPod("memif-claim-2"))
	poll.Until(t, waitLimit, "the second pod unschedulable", func() error {
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, second.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, condition := range pod.Status.Conditions {
			if condition.Type == corev1.PodScheduled && condition.Status == corev1.ConditionFalse && condition.Reason == corev1.PodReasonUnschedulable {
				t.Logf("second pod: %s", condition.Message)
				return nil
			}
		}
		return fmt.Errorf("phase %s, conditions %v", pod.Status.Phase, pod.Status.Conditions)
	})

	if err := c.RestartKubelet(ctx); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	a = startAgent(t, c, client)
	if again := podMemif(t, a, "memif-claim-1"); again.AllocationID != memif.AllocationID || again.Secret != memif.Secret {
		t.Errorf("after kubelet's and the agent's restart the pod holds %v, want %v", again, memif)
	}
	if _, err := vswitch.WaitReceiving(ctx); err != nil {
		t.Errorf("after the restarts the vswitch receives no packets: %v", err)
	}

	if err := vswitch.Stop(); err != nil {
		t.Logf("stop vswitch: %v", err)
	}
	if err := client.CoreV1().Pods(namespace).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "the first claim released", func() error {
		if _, err := os.Stat(memif.HostDir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s still there (%v)", memif.HostDir, err)
		}
		return nil
	})
	waitRunning(ctx, t, client, second.Name)
	if next := podMemif(t, a, "memif-claim-2"); next.DeviceIDs[0] != memif.DeviceIDs[0] {
		t.Errorf("second pod holds %v, want the released device %s", next.DeviceIDs, memif.DeviceIDs[0])
	}
}

// TestAgentRestartAndStopOnARealNode: an agent restart leaves the node's
// ResourceSlice untouched (the same object, not recreated); a pod and its
// claim deleted while the agent is down are released when it starts (the
// directory gone, the device prepared for the next pod); the agent back with
// the DRA driver switched off, and then the agent stopped for good, leave
// no slice of the node (kubelet removes them once the driver is gone).
// It runs on containerd 2.x and on containerd 1.7 with enable_cdi, the
// oldest containerd whose CRI injects CDI devices (1.6 has no CDI).
func TestAgentRestartAndStopOnARealNode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime cluster.Runtime
	}{
		{"containerd 2.x", cluster.Containerd},
		{"containerd 1.7 with CDI", cluster.Containerd17},
	} {
		t.Run(tc.name, func(t *testing.T) { agentRestartAndStop(t, tc.runtime) })
	}
}

func agentRestartAndStop(t *testing.T, runtime cluster.Runtime) {
	c, client := startCluster(t, cluster.Options{Runtime: runtime, Progress: testlog.Writer(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	a := startAgent(t, c, client)
	published := nodeSlice(ctx, t, client)

	a.Stop()
	a = startAgent(t, c, client)
	first := createPod(ctx, t, client, podOf("memif-restart-1", cluster.PauseImage, nil, true))
	waitRunning(ctx, t, client, first.Name)
	if now := nodeSlice(ctx, t, client); now.UID != published.UID || now.ResourceVersion != published.ResourceVersion {
		t.Errorf("after the agent's restart the slice is %s (version %s), want %s (version %s) untouched",
			now.UID, now.ResourceVersion, published.UID, published.ResourceVersion)
	}
	memif := podMemif(t, a, first.Name)
	checkCDIApplied(ctx, t, c, client, first.Name, memif)

	a.Stop()
	if err := client.CoreV1().Pods(namespace).Delete(ctx, first.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "the pod and its claim gone from the API server", func() error {
		if _, err := client.CoreV1().Pods(namespace).Get(ctx, first.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod: %v", err)
		}
		list, err := client.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 {
			return fmt.Errorf("claims %v, %v", list, err)
		}
		return nil
	})
	a = startAgent(t, c, client)
	poll.Until(t, waitLimit, "the deleted pod's memif released", func() error {
		if _, err := os.Stat(memif.HostDir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s still there (%v)", memif.HostDir, err)
		}
		if list := a.DeviceManager.ListAllocations(); len(list) != 0 {
			return fmt.Errorf("still held: %v", list)
		}
		return nil
	})
	second := createPod(ctx, t, client, podOf("memif-restart-2", cluster.PauseImage, nil, true))
	waitRunning(ctx, t, client, second.Name)
	next := podMemif(t, a, second.Name)
	if next.DeviceIDs[0] != memif.DeviceIDs[0] {
		t.Errorf("the next pod holds %v, want the released device %s", next.DeviceIDs, memif.DeviceIDs[0])
	}
	checkCDIApplied(ctx, t, c, client, second.Name, next)
	if err := client.CoreV1().Pods(namespace).Delete(ctx, second.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "the next pod's memif released", func() error {
		if list := a.DeviceManager.ListAllocations(); len(list) != 0 {
			return fmt.Errorf("still held: %v", list)
		}
		return nil
	})

	a.Stop()
	a = startDriverOff(t, c, claimsOnly())
	waitNoNodeSlice(ctx, t, client, "the agent back with the DRA driver off")

	a.Stop()
	a = startAgent(t, c, client)
	nodeSlice(ctx, t, client)
	a.Stop()
	waitNoNodeSlice(ctx, t, client, "the agent stopped for good")
}

// kubelet wipes only the slices of a driver it registered; a driver
// that stops before kubelet registered it withdraws its own.
func TestDriverKubeletNeverRegisteredWithdrawsItsSlice(t *testing.T) {
	c, client := startCluster(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A registration directory kubelet does not watch: it never learns of
	// the driver, as when the agent goes before kubelet's plugin watcher
	// gets to it.
	a := runAgent(t, c, claimsOnly(), driverConfig(c, t.TempDir()), inprocess.Options{DRAClient: client})
	nodeSlice(ctx, t, client)
	if a.DRADriver.KubeletRegistered() {
		t.Fatal("kubelet registered a driver outside its registration directory")
	}
	a.Stop()
	waitNoNodeSlice(ctx, t, client, "the unregistered driver stopped")
}

// nodeSlice waits for the driver's one ResourceSlice of the node and
// returns it.
func nodeSlice(ctx context.Context, t *testing.T, client kubernetes.Interface) resourceapi.ResourceSlice {
	t.Helper()
	var slice resourceapi.ResourceSlice
	poll.Until(t, waitLimit, "the node's ResourceSlice", func() error {
		slices := nodeSlices(ctx, client)
		if len(slices) != 1 {
			return fmt.Errorf("slices of %s: %v", cluster.NodeName, slices)
		}
		slice = slices[0]
		return nil
	})
	return slice
}

// waitNoNodeSlice waits until the node has no slice of the driver.
func waitNoNodeSlice(ctx context.Context, t *testing.T, client kubernetes.Interface, after string) {
	t.Helper()
	poll.Until(t, waitLimit, "no slice of the node left after "+after, func() error {
		if slices := nodeSlices(ctx, client); len(slices) != 0 {
			return fmt.Errorf("slices of %s: %d", cluster.NodeName, len(slices))
		}
		return nil
	})
}

// nodeSlices lists the driver's ResourceSlices of the node; nil when the
// API server does not answer.
func nodeSlices(ctx context.Context, client kubernetes.Interface) []resourceapi.ResourceSlice {
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		resourceapi.ResourceSliceSelectorNodeName: cluster.NodeName,
		resourceapi.ResourceSliceSelectorDriver:   claims.DefaultDriverName,
	}.String()})
	if err != nil {
		return nil
	}
	return list.Items
}

// checkCDIApplied checks that containerd gave the pod's container the env
// and the mount of its claim's CDI spec: a containerd whose CDI is off
// runs the pod without them.
func checkCDIApplied(ctx context.Context, t *testing.T, c *cluster.Cluster, client kubernetes.Interface, podName string, memif dmapi.MemifInfo) {
	t.Helper()
	env, mounts := containerSpec(ctx, t, c, client, podName)
	for _, want := range []string{dmapi.EnvMemifSocket + "=" + memif.ContainerSocket, dmapi.EnvMemifSecret + "=" + memif.Secret} {
		if !slices.Contains(env, want) {
			t.Errorf("containerd gave %s's container env %q, want %s (from the claim's CDI spec)", podName, env, strings.SplitN(want, "=", 2)[0])
		}
	}
	if !slices.ContainsFunc(mounts, func(m ociMount) bool { return m.Source == memif.HostDir && m.Destination == "/run/vpp" }) {
		t.Errorf("containerd gave %s's container mounts %+v, want %s at /run/vpp", podName, mounts, memif.HostDir)
	}
}

// ociMount is a mount of the container's OCI spec.
type ociMount struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// containerSpec returns the env and mounts containerd gave the pod's
// container, from the OCI spec it holds.
func containerSpec(ctx context.Context, t *testing.T, c *cluster.Cluster, client kubernetes.Interface, podName string) ([]string, []ociMount) {
	t.Helper()
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, podName, metav1.GetOptions{})
	if err != nil || len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("pod %s: %v, %v", podName, pod, err)
	}
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := c.Ctr(ctx, "containers", "info", id)
	if err != nil {
		t.Fatalf("ctr containers info %s: %v\n%s", id, err, out)
	}
	var info struct {
		Spec struct {
			Process struct {
				Env []string `json:"env"`
			} `json:"process"`
			Mounts []ociMount `json:"mounts"`
		} `json:"Spec"`
	}
	// ctr's output may start with containerd's warnings (stderr, 2.x);
	// the JSON starts on the first line that opens with a brace.
	start := strings.Index("\n"+out, "\n{")
	if err := json.NewDecoder(strings.NewReader(out[max(start, 0):])).Decode(&info); start < 0 || err != nil {
		t.Fatalf("ctr containers info %s: %v\n%s", id, err, out)
	}
	return info.Spec.Process.Env, info.Spec.Mounts
}

// createPod creates pod and deletes it when t ends.
func createPod(ctx context.Context, t testing.TB, client kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	name := pod.Name
	pod, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.CoreV1().Pods(namespace).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	return pod
}

func podMemif(t testing.TB, a *agent, pod string) dmapi.MemifInfo {
	t.Helper()
	var memif dmapi.MemifInfo
	poll.Until(t, waitLimit, pod+"'s memif prepared", func() error {
		var err error
		memif, err = a.DeviceManager.GetPodMemifInfo(podapi.PodID{Namespace: namespace, Name: pod})
		return err
	})
	return memif
}

func waitRunning(ctx context.Context, t testing.TB, client kubernetes.Interface, name string) {
	t.Helper()
	poll.Until(t, waitLimit, name+" running", func() error {
		pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning {
			var waiting []string
			for _, status := range pod.Status.ContainerStatuses {
				if status.State.Waiting != nil {
					waiting = append(waiting, status.State.Waiting.Reason+": "+status.State.Waiting.Message)
				}
			}
			return fmt.Errorf("phase %s %s %v", pod.Status.Phase, strings.Join(waiting, "; "), pod.Status.Conditions)
		}
		return nil
	})
}
