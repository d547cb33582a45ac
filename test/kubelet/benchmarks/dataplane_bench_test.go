package benchmarks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	docker "github.com/fsouza/go-dockerclient"
	v1 "k8s.io/api/core/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/test/kit/dockershim"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	// podImageRepository is the pod side's image, imported from testpmd's
	// rootfs skeleton; the container binds the host's /usr.
	podImageRepository = "memif-bench-pod"
	// warmUp passes between link-up and the measurement, so that both
	// testpmd processes are in their steady forwarding loop.
	warmUp = time.Second
	// rateWindow is how long received packets are counted per side.
	rateWindow = 2 * time.Second
	// linkTimeout bounds the wait for link-up; a failure deadline only.
	linkTimeout = 30 * time.Second
)

// memifEnd is what both ends of a memif need: the host directory holding
// the socket (mounted into the pod side's container), the socket's host
// path (the vswitch side's), and the envs the pod side reads.
type memifEnd struct {
	hostDir, containerDir, hostSocket string
	env                               map[string]string
	labels                            map[string]string
}

// BenchmarkMemifDataPlane measures packets per second of 64-byte packets
// from a DPDK testpmd memif client in a container (the pod side) to a
// testpmd memif server on the host (the vswitch side), counted by the
// server's telemetry.
//
// "ours" runs over a memif the agent allocated: a pod admitted by
// kubelet's real device manager, its container made with the envs and
// mount kubelet handed back, the vswitch side on the socket path and
// secret the agent's node API lists for it. The baseline ("plain") runs
// the same container and server over a plain temporary directory and a
// random secret. Both pairs run at once and are counted over the same
// window, so that both see the same machine load; on a shared machine,
// pairs measured one after the other differ more by the load of the
// moment than by anything else. Reported: medians of both in packets per
// second (each pair having about half the CPU) and the median of the
// iterations' ratios ours/plain.
func BenchmarkMemifDataPlane(b *testing.B) {
	n := newNode(b)
	image := importPodImage(b, n.docker)
	var ours, plain, ratios []float64
	for i := 0; b.Loop(); i++ {
		o, p := measureSideBySide(b, n.docker, image, n.allocatedEnd(b, fmt.Sprintf("dp-%d", i)), plainEnd(b))
		ours, plain, ratios = append(ours, o), append(plain, p), append(ratios, o/p)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(ours), "ours-pps")
	b.ReportMetric(median(plain), "plain-dir-pps")
	b.ReportMetric(median(ratios), "ours/plain")
}

func importPodImage(b *testing.B, client *docker.Client) string {
	b.Helper()
	rootfs, err := testpmd.PodRootfs()
	if err != nil {
		b.Fatal(err)
	}
	err = client.ImportImage(docker.ImportImageOptions{
		Repository: podImageRepository, Tag: "latest", Source: "-",
		InputStream: bytes.NewReader(rootfs), OutputStream: &bytes.Buffer{},
	})
	if err != nil {
		b.Fatalf("import the pod image: %v", err)
	}
	return podImageRepository + ":latest"
}

// allocatedEnd admits a pod asking one memif and returns its memif as the
// pod's container and the vswitch would see it.
func (n *node) allocatedEnd(b *testing.B, name string) memifEnd {
	b.Helper()
	pod := kubelettest.NewPod(name, resource, 1)
	options, err := n.kubelet.AdmitPod(n.ctx, pod)
	if err != nil {
		b.Fatal(err)
	}
	opts := options["c0"]
	if len(opts.Mounts) != 1 {
		b.Fatalf("kubelet handed pod %s %d mounts, want the allocation's one", name, len(opts.Mounts))
	}
	end := memifEnd{
		hostDir: opts.Mounts[0].HostPath, containerDir: opts.Mounts[0].ContainerPath,
		env: map[string]string{}, labels: kubeletLabels(pod, "c0"),
	}
	for _, env := range opts.Envs {
		end.env[env.Name] = env.Value
	}
	for _, annotation := range opts.Annotations {
		end.labels["annotation."+annotation.Name] = annotation.Value
	}
	for _, allocation := range allocations(b, n.ctx, n.api) {
		if allocation.GetHostDir() == end.hostDir {
			end.hostSocket = allocation.GetHostSocket()
		}
	}
	if end.hostSocket == "" {
		b.Fatalf("the agent lists no allocation in %s, the directory kubelet mounted for pod %s", end.hostDir, name)
	}
	return end
}

// kubeletLabels are the labels dockershim puts on a pod's app container,
// which the agent's pod tracking reads.
func kubeletLabels(pod *v1.Pod, container string) map[string]string {
	shimPod := dockershim.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	return shimPod.Labels(container, dockerpods.DockerTypeContainer)
}

// plainEnd is a memif on a fresh temporary directory and a random secret,
// laid out like an allocation but made by nobody.
func plainEnd(b *testing.B) memifEnd {
	b.Helper()
	dir, err := os.MkdirTemp("", "bp")
	if err != nil {
		b.Fatalf("create the baseline's socket directory: %v", err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	secret := make([]byte, 12)
	if _, err := rand.Read(secret); err != nil {
		b.Fatalf("random secret: %v", err)
	}
	const containerDir, socketName = "/run/vpp", "memif.sock"
	return memifEnd{
		hostDir: dir, containerDir: containerDir, hostSocket: filepath.Join(dir, socketName),
		env: map[string]string{
			dmapi.EnvMemifSocket: containerDir + "/" + socketName,
			dmapi.EnvMemifSecret: hex.EncodeToString(secret),
		},
	}
}

// memifPair is a running vswitch side and pod side over one memif.
type memifPair struct {
	vswitch     *testpmd.Vswitch
	containerID string
}

// startPair starts the vswitch side on end's host socket and the pod side
// in a container, and waits for the link. Stop it with stop.
func startPair(b *testing.B, client *docker.Client, image string, end memifEnd) *memifPair {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), linkTimeout)
	defer cancel()
	vswitch, err := testpmd.StartVswitch(ctx, testpmd.VswitchConfig{
		Socket: end.hostSocket, Secret: end.env[dmapi.EnvMemifSecret],
		LogPath: filepath.Join(b.TempDir(), "vswitch.log"),
	})
	if err != nil {
		b.Fatal(err)
	}
	pair := &memifPair{vswitch: vswitch}
	pair.containerID = startPodSide(b, client, image, end)
	if err := vswitch.WaitLinkUp(ctx); err != nil {
		logs := containerLogs(client, pair.containerID)
		pair.stop(b, client)
		b.Fatalf("%v; the pod side's output ends with:\n%s", err, logs)
	}
	return pair
}

// stop stops the vswitch side first (testpmd's memif server can crash
// when its client leaves first), then removes the pod side's container.
func (p *memifPair) stop(b *testing.B, client *docker.Client) {
	b.Helper()
	if err := p.vswitch.Stop(); err != nil {
		b.Error(err)
	}
	removeContainer(b, client, p.containerID)
}

// measureSideBySide runs a pair on each end at once and returns each
// one's received packets per second over the same rateWindow.
func measureSideBySide(b *testing.B, client *docker.Client, image string, ours, plain memifEnd) (oursPPS, plainPPS float64) {
	b.Helper()
	oursPair := startPair(b, client, image, ours)
	defer oursPair.stop(b, client)
	plainPair := startPair(b, client, image, plain)
	defer plainPair.stop(b, client)
	time.Sleep(warmUp)
	ctx, cancel := context.WithTimeout(context.Background(), 2*rateWindow+10*time.Second)
	defer cancel()
	var plainErr error
	measured := make(chan struct{})
	go func() {
		defer close(measured)
		plainPPS, plainErr = plainPair.vswitch.RxRate(ctx, rateWindow)
	}()
	oursPPS, oursErr := oursPair.vswitch.RxRate(ctx, rateWindow)
	<-measured
	if err := errors.Join(oursErr, plainErr); err != nil {
		b.Fatal(err)
	}
	return oursPPS, plainPPS
}

// startPodSide runs testpmd's pod side in a container as dockershim would
// make the pod's container: the envs, the memif directory bind-mounted,
// no network.
func startPodSide(b *testing.B, client *docker.Client, image string, end memifEnd) string {
	b.Helper()
	env := make([]string, 0, len(end.env))
	for name, value := range end.env {
		env = append(env, name+"="+value)
	}
	sort.Strings(env)
	container, err := client.CreateContainer(docker.CreateContainerOptions{
		Config: &docker.Config{Image: image, Cmd: testpmd.PodCommand(), Env: env, Labels: end.labels},
		HostConfig: &docker.HostConfig{
			NetworkMode: "none",
			Binds:       append(testpmd.PodBinds(), end.hostDir+":"+end.containerDir),
		},
	})
	if err != nil {
		b.Fatalf("create the pod side's container: %v", err)
	}
	if err := client.StartContainer(container.ID, nil); err != nil {
		removeContainer(b, client, container.ID)
		b.Fatalf("start the pod side's container: %v", err)
	}
	return container.ID
}

func removeContainer(b *testing.B, client *docker.Client, id string) {
	b.Helper()
	err := client.RemoveContainer(docker.RemoveContainerOptions{ID: id, Force: true})
	var missing *docker.NoSuchContainer
	if err != nil && !errors.As(err, &missing) {
		b.Errorf("remove the pod side's container %.12s: %v", id, err)
	}
}

func containerLogs(client *docker.Client, id string) string {
	var out bytes.Buffer
	_ = client.Logs(docker.LogsOptions{Container: id, Stdout: true, Stderr: true, OutputStream: &out, ErrorStream: &out, Tail: "20"})
	return out.String()
}
