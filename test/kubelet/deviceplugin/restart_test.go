package deviceplugin_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

// admitted is a pod kubelet admitted, with what its container c0 got.
type admitted struct {
	pod     *v1.Pod
	memif   memif
	devices []string
}

func (n *node) admitOne(t *testing.T, name string) admitted {
	t.Helper()
	pod := kubelettest.NewPod(name, resource, 1)
	options := n.runContainers(t, pod)
	return admitted{pod: pod, memif: memifOf(options["c0"]), devices: n.kubelet.Devices(pod.UID, "c0", resource)}
}

// checkKept checks that kubelet and the agent both still hold what each
// earlier pod was given: the same devices, envs, mount and directory.
func (n *node) checkKept(t *testing.T, a *agent, when string, pods []admitted) {
	t.Helper()
	held := map[string]dmapi.MemifInfo{}
	for _, info := range a.DeviceManager.ListAllocations() {
		held[info.HostDir] = info
	}
	for _, p := range pods {
		options, err := n.kubelet.ContainerOptions(n.ctx, p.pod)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		got := memifOf(options["c0"])
		if !maps.Equal(got.envs, p.memif.envs) || !maps.Equal(got.mounts, p.memif.mounts) {
			t.Errorf("%s: runtime gets envs %v, mounts %v for pod %s; want what it got first", when, keys(got.envs), got.mounts, p.pod.Name)
		}
		if devices := n.kubelet.Devices(p.pod.UID, "c0", resource); !slices.Equal(devices, p.devices) {
			t.Errorf("%s: kubelet holds %v for pod %s, want %v", when, devices, p.pod.Name, p.devices)
		}
		hostDir := p.memif.mounts[n.cfg.ContainerDir]
		info, ok := held[hostDir]
		switch {
		case !ok:
			t.Errorf("%s: the agent lost the allocation of pod %s (directory %s)", when, p.pod.Name, hostDir)
		case info.Secret != p.memif.envs[dmapi.EnvMemifSecret]:
			t.Errorf("%s: the allocation of pod %s has a new secret", when, p.pod.Name)
		case !slices.Equal(slices.Sorted(slices.Values(info.DeviceIDs)), p.devices):
			t.Errorf("%s: the allocation of pod %s holds %v, kubelet gave %v", when, p.pod.Name, info.DeviceIDs, p.devices)
		}
		if _, err := os.Stat(hostDir); err != nil {
			t.Errorf("%s: directory of pod %s: %v", when, p.pod.Name, err)
		}
	}
}

func TestKubeletRestartsKeepAllocations(t *testing.T) {
	const restarts = 10
	n := newNode(t)
	a := n.startAgent(t, n.cfg)
	pods := []admitted{n.admitOne(t, "before-restarts")}
	for restart := 1; restart <= restarts; restart++ {
		when := fmt.Sprintf("after kubelet restart %d", restart)
		if err := n.kubelet.Restart(n.ctx); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		n.waitForCapacity(t, deviceCount)
		n.checkKept(t, a, when, pods)
		pods = append(pods, n.admitOne(t, fmt.Sprintf("after-restart-%d", restart)))
	}
	n.checkKept(t, a, "at the end", pods)
}

// TestKubeletRestartsNeverWaitOutRegistration restarts kubelet many times
// back to back, as the restart benchmark does: each restart must bring the
// capacity back, and no registration may wait out the register timeout
// (kubelet dialling back our socket while its startup cleanup removed it:
// the registration must be cancelled and made again at once). Counted, not
// timed: a Register call that ran out of time has its own error kind. Nor
// may kubelet refuse one: a registration meant for the stopped kubelet's
// socket that reached the new kubelet, besides the one made for the new
// socket, is refused as already connected.
func TestKubeletRestartsNeverWaitOutRegistration(t *testing.T) {
	const restarts = 100
	n := newNode(t)
	a := n.startAgent(t, n.cfg)
	for restart := 1; restart <= restarts; restart++ {
		if err := n.kubelet.Restart(n.ctx); err != nil {
			t.Fatalf("kubelet restart %d: %v", restart, err)
		}
		n.waitForCapacity(t, deviceCount)
	}
	a.Stop() // the counters are final
	for _, kind := range []string{"registration-timeout", "registration-refused"} {
		if got := counterValue(t, a.Metrics, "memif_device_manager_errors_total", kind); got != 0 {
			t.Errorf("%d kubelet restarts brought %v failed Register calls (errors_total{kind=%q}), want none", restarts, got, kind)
		}
	}
	// A successful registration whose answer came after the next restart
	// began is not counted, so only a lower bound holds.
	if got := counterValue(t, a.Metrics, "memif_device_manager_registrations_total", ""); got < 1 {
		t.Errorf("registrations_total = %v, want at least the first", got)
	}
}

// counterValue reads a counter, with label kind when kind is not empty; a
// counter never incremented is 0.
func counterValue(t testing.TB, registry *prometheus.Registry, name, kind string) float64 {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, metric := range family.GetMetric() {
			if kind == "" || slices.ContainsFunc(metric.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == "kind" && l.GetValue() == kind
			}) {
				return metric.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestPluginRestartKeepsAllocations(t *testing.T) {
	n := newNode(t)
	a := n.startAgent(t, n.cfg)
	var pods []admitted
	for i := range 3 {
		pods = append(pods, n.admitOne(t, fmt.Sprintf("pod-%d", i)))
	}
	n.stopAgent(t, a)
	a = n.startAgent(t, n.cfg)
	n.checkKept(t, a, "after the plugin restarted", pods)
	// kubelet hands out only free devices; the restarted agent must agree
	// that they are free.
	pods = append(pods, n.admitOne(t, "after-plugin-restart"))
	n.checkKept(t, a, "after a new pod", pods)
}

// TestNodeRestartRecoversAllocationsFromKubelet: the agent saves kubelet's
// allocations without a sync, so a node restart (power loss, kernel
// crash) may lose the records made since the last sync. kubelet's own
// device checkpoint holds every answer a container was given, and after
// the restart the agent takes back from it what it lost: the same
// directory, devices and secret for each pod, and kubelet's next pod gets
// devices the agent agrees are free. The restart is simulated: the
// journal is put back as the last sync left it (the start's compaction),
// the boot the checkpoint was marked in is another, the socket root
// (tmpfs on a node) is emptied, and kubelet restarts.
func TestNodeRestartRecoversAllocationsFromKubelet(t *testing.T) {
	n := newNode(t)
	journalPath, bootPath := n.cfg.CheckpointPath+".journal", n.cfg.CheckpointPath+".boot"
	a := n.startAgent(t, n.cfg)
	var synced []byte
	poll.Until(t, waitTimeout, "the agent marking its checkpoint with this boot", func() error {
		if _, err := os.Stat(bootPath); err != nil {
			return err
		}
		var err error
		synced, err = os.ReadFile(journalPath)
		return err
	})
	var pods []admitted
	for i := range 3 {
		pods = append(pods, n.admitOne(t, fmt.Sprintf("before-restart-%d", i)))
	}
	n.stopAgent(t, a)
	if journal, err := os.ReadFile(journalPath); err != nil || len(journal) <= len(synced) {
		t.Fatalf("setup: the journal holds %d bytes (%v), want the three allocations appended to the %d synced", len(journal), err, len(synced))
	}
	if err := os.WriteFile(journalPath, synced, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bootPath, []byte("a-boot-before-the-restart\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(n.cfg.SocketRoot); err != nil {
		t.Fatal(err)
	}
	if err := n.kubelet.Restart(n.ctx); err != nil {
		t.Fatal(err)
	}
	a = n.startAgent(t, n.cfg)
	n.checkKept(t, a, "after the node restarted", pods)
	pods = append(pods, n.admitOne(t, "after-restart"))
	n.checkKept(t, a, "after a new pod", pods)
}
