package memifnode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kit/vpp"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// TestVPPPodIsTheMemifSlaveOfTheNodesVPP runs a VPPPod on a real node
// without the agent: its memif directory is a host path holding the
// memif.json the agent would write and the socket of a VPP on the host,
// and its secret is set in its env as the agent would. The pod's VPP
// connects with two queue pairs and pings its gateway and beyond it.
func TestVPPPodIsTheMemifSlaveOfTheNodesVPP(t *testing.T) {
	node := vpp.Start(t, vpp.Plugins("ping"))
	c := cluster.StartForTest(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := ImportVPPImage(ctx, c); err != nil {
		t.Fatal(err)
	}

	random := make([]byte, 8)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	secret := hex.EncodeToString(random)
	nodeDir := "/run/contiv/vppcnf-" + secret[:6]
	dir := c.HostPath(nodeDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	content, err := memifjson.Render([]memifjson.Interface{{
		MemifID: 0, Socket: "/run/vpp/memif.sock", Network: "red", Mode: "ip",
		IPs: []netip.Prefix{netip.MustParsePrefix("10.70.0.2/24")}, Gateway: []netip.Addr{netip.MustParseAddr("10.70.0.1")},
		Queues: 2, RingSize: 1024, BufferSize: 2048, MTU: 9000,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, memifjson.FileName), content, memifjson.FileMode); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{
		"create loopback interface",
		"set interface state loop0 up",
		"set interface ip address loop0 10.70.0.1/24",
		"create memif socket id 1 filename " + filepath.Join(dir, "memif.sock"),
		"create interface memif id 0 socket-id 1 master secret " + secret + " mode ip rx-queues 2 tx-queues 2 ring-size 1024 buffer-size 2048",
		"set interface state memif1/0 up",
		"set interface unnumbered memif1/0 use loop0",
		"ip route add 10.70.0.2/32 via memif1/0",
		"create loopback interface",
		"set interface state loop1 up",
		"set interface ip address loop1 10.99.0.1/32",
	} {
		if out := node.CLI(t, command); strings.TrimSpace(out) != "" && !strings.HasPrefix(out, "loop") {
			t.Fatalf("node's VPP refused %q: %s", command, out)
		}
	}

	pod := VPPPod("default", "vpp-a", "")
	container := &pod.Spec.Containers[0]
	delete(container.Resources.Limits, v1.ResourceName(ResourceName))
	container.Env = []v1.EnvVar{{Name: "MEMIF_SECRET", Value: secret}}
	hostPathType := v1.HostPathDirectory
	pod.Spec.Volumes = []v1.Volume{{Name: "memif", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: nodeDir, Type: &hostPathType}}}}
	container.VolumeMounts = []v1.VolumeMount{{Name: "memif", MountPath: "/run/vpp"}}
	client, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{c: c, client: client}
	if _, err := n.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poll.Every(t, 2*time.Minute, time.Second, "the VPP pod running", func() error {
		_, err := n.PodRunning(ctx, "default", "vpp-a")
		return err
	})
	cli := PodVPP(c, "default", "vpp-a")
	poll.Every(t, time.Minute, 500*time.Millisecond, "the pod's memif connected", func() error {
		err := cli.Connected(ctx)
		if err != nil {
			logs, _ := c.Kubectl(ctx, "logs", "-n", "default", "vpp-a", "--tail", "20")
			err = fmt.Errorf("%w; the pod's log ends with:\n%s", err, logs)
		}
		return err
	})
	for _, target := range []string{"10.70.0.1", "10.99.0.1"} {
		poll.Every(t, 30*time.Second, 500*time.Millisecond, "the pod pings "+target, func() error {
			sent, received, err := cli.Ping(ctx, target)
			if err == nil && (sent != vppcnf.PingCount || received != sent) {
				err = fmt.Errorf("%d sent, %d received", sent, received)
			}
			return err
		})
	}
	for side, show := range map[string]vppcnf.CLI{"pod": cli, "node": vppcnf.HostCLI(node.Prefix, node.CLISocket)} {
		memifs, err := show.ShowMemif(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(memifs) != 1 || memifs[0].QueuePairs() != 2 || !memifs[0].Connected {
			t.Errorf("%s side: show memif %+v, want one connected memif with 2 queue pairs", side, memifs)
		}
	}
}
