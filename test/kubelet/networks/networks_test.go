package networks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// Bounds on what the suite waits for on a loaded 2-core machine.
const (
	podTimeout   = 3 * time.Minute
	agentTimeout = 3 * time.Minute
	// pingTimeout bounds the wait for a path through the node's VPP once
	// both memifs are connected (ARP, routes).
	pingTimeout = time.Minute
)

// values are the chart's values the suite installs it with
// (values.yaml beside this file), from the repository root.
const values = "test/kubelet/networks/values.yaml"

// The gateways the node's VPP holds: the first address of each l3
// network's subnet in values.yaml.
const (
	redGateway  = "10.70.0.1"
	blueGateway = "10.80.0.1"
)

// liveNetworks is networks.conf after the live change: the network green
// is new, and red's memifs change from interrupt to adaptive rx mode.
const liveNetworks = `networks:
  - {name: pods, type: l2, rx-mode: interrupt}
  - {name: red, type: l3, subnet: 10.70.0.0/24, rx-mode: adaptive}
  - {name: blue, type: l3, subnet: 10.80.0.0/24, rx-mode: interrupt}
  - {name: tiny, type: l3, subnet: 10.99.0.0/30, rx-mode: interrupt}
  - {name: green, type: l3, subnet: 10.90.0.0/24, rx-mode: interrupt}
default-network: pods
`

// The suite's pods.
const (
	redA  = "cnf-red-a"
	redB  = "cnf-red-b" // queues: 2
	blue  = "cnf-blue"
	green = "cnf-green"
	tinyA = "cnf-tiny-a"
	l2Tx  = "l2-tx" // in the default network: no annotation
	l2Rx  = "l2-rx"
	// claimed asks for its memif with a claim of claimTemplate.
	claimed = "cnf-claim"
)

// claimTemplate makes claims whose opaque MemifConfig puts the memif in
// red, with the address claimIP and two queues.
const (
	// deviceClass is the chart's (dra.enabled).
	deviceClass   = "memif.contivpp.io"
	claimTemplate = "memif-red"
	claimIP       = "10.70.0.50/24"
)

// suite is the state the steps of TestNetworksOnARealNode share.
type suite struct {
	c    *cluster.Cluster
	n    *memifnode.Node
	node *memifnode.NodeVPP
	// memifs are the wired pods' memif.json and allocation.
	memifs map[string]memifnode.PodMemif
}

// TestNetworksOnARealNode walks through the networks of a node with VPP
// as its vswitch; each step builds on the pods the steps before left.
func TestNetworksOnARealNode(t *testing.T) {
	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	s := start(t)

	step("l3 network red: two VPP pods ping each other and their gateway", s.redPing)
	step("queues 2: two queue pairs in show memif on both sides", s.queues)
	step("l3 network blue reaches nothing of red", s.blueIsolated)
	step("each bad input leaves its memif unwired and says why", s.badInputs)
	step("networks.conf change applied live: a new network green", s.liveChange)
	step("l2 network pods: testpmd pods pass traffic through the bridge domain", s.l2Traffic)
	step("DRA: a claim's MemifConfig gives its network, mode and address", s.claimConfig)
	// The last three need only the pods the steps before left: each runs
	// whatever the others found. The rx mode is read before the restart: a
	// new agent applies the models' rx modes to the links it finds up.
	t.Run("networks.conf change applied live: red's new rx mode in the node's VPP", s.liveRxMode)
	t.Run("agent restart: no VPP change, the same addresses", s.agentRestart)
	t.Run("VPP hung (SIGSTOP): a new memif pod is admitted meanwhile; VPP resumed, its memif is wired", s.vswitchHung)
	t.Run("VPP down past vswitch-health-grace: new memif pods wait; VPP back, they run", s.vswitchDown)
}

func start(t *testing.T) *suite {
	c := cluster.StartForTest(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx := t.Context()
	node, err := memifnode.StartNodeVPP(ctx, c, "ping")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if out, err := node.CLI().Run(context.Background(), "show memif"); err == nil {
				t.Logf("the node's VPP, show memif:\n%s", out)
			}
		}
		if err := node.Stop(); err != nil {
			t.Errorf("stop the node's VPP: %v", err)
		}
	})
	t.Logf("the node's VPP %s, API socket %s", node.Version, node.VPP.APISocket)
	if err := memifnode.ImportVPPImage(ctx, c); err != nil {
		t.Fatal(err)
	}
	n := memifnode.DeployReady(ctx, t, c, memifnode.Options{BinDir: binDir, Values: []string{values}, Progress: t.Logf}, agentTimeout, 60)
	return &suite{c: c, n: n, node: node, memifs: map[string]memifnode.PodMemif{}}
}

func (s *suite) redPing(t *testing.T) {
	s.startVPPPod(t, redA, `[{"network": "red"}]`)
	s.startVPPPod(t, redB, `[{"network": "red", "mode": "ip", "queues": 2}]`)
	for _, name := range []string{redA, redB} {
		iface := s.wantInterface(t, name, "red", "ip")
		if len(iface.IPs) != 1 || !strings.HasPrefix(iface.IPs[0].String(), "10.70.0.") || iface.IPs[0].Bits() != 24 ||
			len(iface.Gateway) != 1 || iface.Gateway[0].String() != redGateway {
			t.Errorf("pod %s: memif.json %+v, want one address of 10.70.0.0/24 and gateway %s", name, iface, redGateway)
		}
	}
	if a, b := s.ip(redA), s.ip(redB); a == b {
		t.Fatalf("pods %s and %s both got %s", redA, redB, a)
	}
	s.wantPing(t, redA, redGateway)
	s.wantPing(t, redB, redGateway)
	s.wantPing(t, redA, s.ip(redB))
	s.wantPing(t, redB, s.ip(redA))
}

func (s *suite) queues(t *testing.T) {
	for name, want := range map[string]int{redA: 1, redB: 2} {
		if queues := s.memifs[name].File.Interfaces[0].Queues; int(queues) != want {
			t.Errorf("pod %s: memif.json says %d queues, want %d", name, queues, want)
		}
		memifs, err := memifnode.PodVPP(s.c, "default", name).ShowMemif(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(memifs) != 1 || !memifs[0].Slave || !memifs[0].Connected || memifs[0].Mode != "ip" || memifs[0].QueuePairs() != want {
			t.Errorf("pod %s's VPP: show memif %+v, want one connected ip slave memif with %d queue pairs", name, memifs, want)
		}
		master, err := s.node.ShowMemif(t.Context(), s.memifs[name].Allocation.HostSocket)
		if err != nil {
			t.Fatal(err)
		}
		if master.Slave || !master.Connected || master.Mode != "ip" || master.QueuePairs() != want {
			t.Errorf("the node's VPP: show memif of pod %s %+v, want a connected ip master with %d queue pairs", name, master, want)
		}
		t.Logf("pod %s: %d queue pairs on the pod's memif %s and the node's %s", name, want, memifs[0].Name, master.Name)
	}
}

func (s *suite) blueIsolated(t *testing.T) {
	s.startVPPPod(t, blue, `[{"network": "blue"}]`)
	iface := s.wantInterface(t, blue, "blue", "ip")
	if len(iface.IPs) != 1 || !strings.HasPrefix(iface.IPs[0].String(), "10.80.0.") || len(iface.Gateway) != 1 || iface.Gateway[0].String() != blueGateway {
		t.Errorf("pod %s: memif.json %+v, want an address of 10.80.0.0/24 and gateway %s", blue, iface, blueGateway)
	}
	// Blue's own path works: what it cannot reach, it could not for its
	// VRF alone.
	s.wantPing(t, blue, blueGateway)
	for _, target := range []string{s.ip(redA), s.ip(redB), redGateway} {
		s.wantNoReply(t, blue, target)
	}
	s.wantNoReply(t, redA, s.ip(blue))
	s.wantNoReply(t, redA, blueGateway)
}

// badInput is a pod whose annotation the agent must refuse.
type badInput struct {
	pod, annotation string
	reason          memifspec.Reason
}

func (s *suite) badInputs(t *testing.T) {
	// tiny has room for one address: tiny-a takes it.
	s.startVPPPod(t, tinyA, `[{"network": "tiny"}]`)
	if iface := s.wantInterface(t, tinyA, "tiny", "ip"); len(iface.IPs) != 1 || iface.IPs[0].String() != "10.99.0.2/30" {
		t.Fatalf("pod %s: memif.json %+v, want tiny's one pod address 10.99.0.2/30", tinyA, iface)
	}
	tests := []badInput{
		{"bad-malformed", `{"network": "red"}`, memifspec.ReasonMalformed},
		{"bad-unknown-network", `[{"network": "purple"}]`, memifspec.ReasonUnknownNetwork},
		{"bad-outside-subnet", `[{"network": "red", "ips": ["10.80.0.9/24"]}]`, memifspec.ReasonAddressOutsideSubnet},
		{"bad-address-taken", fmt.Sprintf(`[{"network": "red", "ips": [%q]}]`, s.memifs[redA].File.Interfaces[0].IPs[0]), memifspec.ReasonAddressTaken},
		{"bad-gateway-address", `[{"network": "red", "ips": ["10.70.0.1/24"]}]`, memifspec.ReasonAddressReserved},
		{"bad-mode", `[{"network": "red", "mode": "ethernet"}]`, memifspec.ReasonModeNotCarried},
		{"bad-queues", `[{"network": "red", "queues": 256}]`, memifspec.ReasonTooManyQueues},
		{"bad-subnet-exhausted", `[{"network": "tiny"}]`, memifspec.ReasonSubnetExhausted},
	}
	refusedBefore := map[memifspec.Reason]float64{}
	for _, tc := range tests {
		value, err := s.n.Metric(t.Context(), "memif_wiring_memifs_refused_total", fmt.Sprintf("reason=%q", tc.reason))
		if err != nil {
			t.Fatal(err)
		}
		refusedBefore[tc.reason] = value
		pod := memifnode.MemifPod("default", tc.pod)
		pod.Annotations = map[string]string{memifspec.AnnotationKey: tc.annotation}
		// Its testpmd waits for a socket that never comes: it needs no
		// share of the node's two cores.
		pod.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("10m")
		if _, err := s.n.CreatePod(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range tests {
		t.Run(tc.pod, func(t *testing.T) { s.wantRefused(t, tc, refusedBefore[tc.reason]) })
	}
	// Nothing else was disturbed: the pods wired before still reach each
	// other, and blue still reaches its gateway only.
	s.wantPing(t, redA, s.ip(redB))
	s.wantPing(t, blue, blueGateway)
	if err := s.n.AgentNeverRestarted(t.Context()); err != nil {
		t.Error(err)
	}
}

// wantRefused waits until the agent has refused tc's pod: the pod runs
// (kubelet got its memif), its memif is not in VPP, its memif.json lists
// no interface, the agent's log and memifctl get say why, and the metric of
// tc's reason counted it.
func (s *suite) wantRefused(t *testing.T, tc badInput, before float64) {
	ctx := t.Context()
	waitRunning(t, s.n, tc.pod)
	var refused memifnode.PodMemif
	poll.Until(t, agentTimeout, "memif.json of "+tc.pod, func() (err error) {
		refused, err = s.n.PodMemif(ctx, "default", tc.pod)
		return err
	})
	if len(refused.File.Interfaces) != 0 {
		t.Errorf("pod %s: memif.json %s, want no interface", tc.pod, refused.JSON)
	}
	// The agent's log line: its message and, among its fields, the pod
	// and the allocation.
	logLine := []string{`msg="memif not wired"`, " allocation=" + refused.Allocation.AllocationID + " ", " pod=default/" + tc.pod + " ", " reason="}
	poll.Until(t, agentTimeout, "the agent logs why "+tc.pod+" is not wired", func() error {
		logs, err := s.c.Kubectl(ctx, "logs", "-n", memifnode.Namespace, "daemonset/"+memifnode.DaemonSet)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(logs, "\n") {
			if containsAll(line+" ", logLine) {
				t.Logf("agent: %s", line)
				return nil
			}
		}
		return fmt.Errorf("the agent's log has no line with %q", logLine)
	})
	networks, err := s.n.MemifNetworks(ctx, "default", tc.pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(networks) != 1 || networks[0].RefusedReason != string(tc.reason) || networks[0].RefusedMessage == "" {
		t.Errorf("memifctl get default/%s: networks %+v, want one memif refused for %s with a message", tc.pod, networks, tc.reason)
	}
	if text, err := s.n.MemifctlText(ctx, "get", "default/"+tc.pod); err != nil || !strings.Contains(text, string(tc.reason)) {
		t.Errorf("memifctl get default/%s says (%v):\n%s\nwant the reason %s", tc.pod, err, text, tc.reason)
	} else if tc.reason == memifspec.ReasonUnknownNetwork {
		t.Logf("memifctl get default/%s:\n%s", tc.pod, text)
	}
	value, err := s.n.Metric(ctx, "memif_wiring_memifs_refused_total", fmt.Sprintf("reason=%q", tc.reason))
	if err != nil {
		t.Fatal(err)
	}
	if value < before+1 {
		t.Errorf("memif_wiring_memifs_refused_total{reason=%q} = %v, was %v before pod %s", tc.reason, value, before, tc.pod)
	}
	if held, err := s.node.State.FindMemif(ctx, refused.Allocation.HostSocket); err != nil || held != nil {
		t.Errorf("pod %s: the node's VPP holds memif %+v on %s (%v), want none", tc.pod, held, refused.Allocation.HostSocket, err)
	}
}

func (s *suite) liveChange(t *testing.T) {
	ctx := t.Context()
	agent, err := s.n.AgentPod(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.n.SetConfigFile(ctx, "networks.conf", liveNetworks); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	s.startVPPPod(t, green, `[{"network": "green"}]`)
	t.Logf("pod %s in the new network green, its memif connected, %v after the ConfigMap update", green, time.Since(changed).Round(time.Second))
	if iface := s.wantInterface(t, green, "green", "ip"); len(iface.IPs) != 1 || !strings.HasPrefix(iface.IPs[0].String(), "10.90.0.") {
		t.Errorf("pod %s: memif.json %+v, want an address of 10.90.0.0/24", green, iface)
	}
	s.wantPing(t, green, "10.90.0.1")
	s.wantNoReply(t, green, s.ip(redA))
	s.wantPing(t, redA, s.ip(redB))
	now, err := s.n.AgentPod(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now.UID != agent.UID {
		t.Errorf("the agent pod is %s now, was %s: the change restarted it", now.Name, agent.Name)
	}
	if err := s.n.AgentNeverRestarted(ctx); err != nil {
		t.Error(err)
	}
}

// liveRxMode checks the rx mode liveNetworks gave red reached the node's
// VPP: the queues of red's memifs are adaptive.
func (s *suite) liveRxMode(t *testing.T) {
	ctx := t.Context()
	for _, name := range []string{redA, redB, claimed} {
		master, err := s.node.ShowMemif(ctx, s.memifs[name].Allocation.HostSocket)
		if err != nil {
			t.Fatal(err)
		}
		poll.Until(t, time.Minute, "red's new rx mode on the node's "+master.Name+" (pod "+name+")", func() error {
			modes, err := s.node.RxMode(ctx, master.Name)
			if err == nil && (len(modes) == 0 || slices.ContainsFunc(modes, func(m string) bool { return m != "adaptive" })) {
				err = fmt.Errorf("show interface rx-placement: %s queues in %v", master.Name, modes)
			}
			return err
		})
		t.Logf("pod %s: the node's %s is adaptive", name, master.Name)
	}
}

func (s *suite) l2Traffic(t *testing.T) {
	ctx := t.Context()
	sender := memifnode.MemifPodForwarding("default", l2Tx, "txonly")
	receiver := memifnode.MemifPodForwarding("default", l2Rx, "rxonly")
	receiver.Annotations = map[string]string{memifspec.AnnotationKey: `[{"network": "pods"}]`}
	for _, pod := range []*v1.Pod{sender, receiver} {
		if _, err := s.n.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{l2Tx, l2Rx} {
		waitRunning(t, s.n, name)
		s.waitMemif(t, name)
		s.wantInterface(t, name, "pods", "ethernet")
	}
	bd, err := s.node.State.BridgeDomain(ctx, "pods")
	if err != nil {
		t.Fatal(err)
	}
	if bd == nil || len(bd.Members) != 2 {
		t.Fatalf("the node's VPP: bridge domain pods %+v, want the memifs of %s and %s", bd, l2Tx, l2Rx)
	}
	s.wantReceiving(t)
}

func (s *suite) claimConfig(t *testing.T) {
	ctx := t.Context()
	config := fmt.Sprintf(`{"apiVersion": %q, "kind": %q, "network": "red", "mode": "ip", "ips": [%q], "queues": 2}`,
		memifspec.APIVersion, memifspec.Kind, claimIP)
	template := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: claimTemplate},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "memif", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: deviceClass}}},
			Config: []resourcev1.DeviceClaimConfiguration{{Requests: []string{"memif"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: claims.DefaultDriverName, Parameters: runtime.RawExtension{Raw: []byte(config)}},
			}}},
		}}},
	}
	if _, err := s.n.Client().ResourceV1().ResourceClaimTemplates("default").Create(ctx, template, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.n.CreatePod(ctx, memifnode.VPPClaimPod("default", claimed, claimTemplate)); err != nil {
		t.Fatal(err)
	}
	s.waitVPPPod(t, claimed)
	iface := s.wantInterface(t, claimed, "red", "ip")
	if len(iface.IPs) != 1 || iface.IPs[0].String() != claimIP || len(iface.Gateway) != 1 || iface.Gateway[0].String() != redGateway || iface.Queues != 2 {
		t.Errorf("pod %s: memif.json %s, want %s via %s with 2 queues", claimed, s.memifs[claimed].JSON, claimIP, redGateway)
	}
	env, err := s.n.ContainerEnv(ctx, "default", claimed)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"MEMIF_NETWORK": "red", "MEMIF_MODE": "ip", "MEMIF_IP": claimIP, "MEMIF_GATEWAY": redGateway, "MEMIF_QUEUES": "2"}
	for key, value := range want {
		if env[key] != value {
			t.Errorf("pod %s: the container's env has %s=%q, want %q", claimed, key, env[key], value)
		}
	}
	t.Logf("pod %s's container env: MEMIF_NETWORK=%s MEMIF_MODE=%s MEMIF_IP=%s MEMIF_GATEWAY=%s MEMIF_QUEUES=%s",
		claimed, env["MEMIF_NETWORK"], env["MEMIF_MODE"], env["MEMIF_IP"], env["MEMIF_GATEWAY"], env["MEMIF_QUEUES"])
	s.wantPing(t, claimed, redGateway)
	s.wantPing(t, claimed, s.ip(redA))
	s.wantNoReply(t, claimed, s.ip(blue))
	s.wantClaimStatus(t, claimed, statusWaitLimit, "LinkUp", metav1.ConditionTrue, "LinkUp")
}

// statusWaitLimit bounds the wait for the claim's status once what it
// shows is so (the agent writes a change within about 2 s).
const statusWaitLimit = 10 * time.Second

// wantClaimStatus waits up to limit until the status of pod's claim shows
// its one memif as memif.json gives it (networkData.ips, data) with Ready
// True, and the condition kind with status and reason.
func (s *suite) wantClaimStatus(t *testing.T, pod string, limit time.Duration, kind string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	ctx := t.Context()
	memif := s.memifs[pod]
	entry, err := json.Marshal(memif.File.Interfaces[0])
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, ip := range memif.File.Interfaces[0].IPs {
		ips = append(ips, ip.String())
	}
	var last string
	poll.Every(t, limit, 200*time.Millisecond, fmt.Sprintf("pod %s's claim: status.devices with its memif.json, Ready True, %s %s (%s)", pod, kind, status, reason), func() error {
		p, err := s.n.Client().CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			return fmt.Errorf("pod %s: claims %+v, want one", pod, p.Status.ResourceClaimStatuses)
		}
		claim, err := s.n.Client().ResourceV1().ResourceClaims("default").Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got, _ := json.Marshal(claim.Status.Devices)
		last = string(got)
		if len(claim.Status.Devices) != 1 {
			return fmt.Errorf("claim %s: status.devices %s, want one", claim.Name, got)
		}
		d := claim.Status.Devices[0]
		if d.Driver != claims.DefaultDriverName || claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 ||
			d.Device != claim.Status.Allocation.Devices.Results[0].Device || d.Pool != claim.Status.Allocation.Devices.Results[0].Pool {
			return fmt.Errorf("claim %s: status.devices %s, want the allocated device of %s", claim.Name, got, claims.DefaultDriverName)
		}
		if d.NetworkData == nil || !slices.Equal(d.NetworkData.IPs, ips) {
			return fmt.Errorf("claim %s: networkData %+v, want ips %v as memif.json", claim.Name, d.NetworkData, ips)
		}
		if d.Data == nil || !bytes.Equal(d.Data.Raw, entry) {
			return fmt.Errorf("claim %s: data %s, want memif.json's entry %s", claim.Name, d.Data, entry)
		}
		if c := meta.FindStatusCondition(d.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("claim %s: Ready %+v, want True", claim.Name, c)
		}
		if c := meta.FindStatusCondition(d.Conditions, kind); c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("claim %s: %s %+v, want %s (%s)", claim.Name, kind, c, status, reason)
		}
		return nil
	})
	t.Logf("pod %s's claim: status.devices %s", pod, last)
}

// wantReceiving waits until l2-rx's testpmd counts more packets than it
// did at the call.
func (s *suite) wantReceiving(t *testing.T) {
	t.Helper()
	var before uint64
	if stats, err := s.n.PodStats(t.Context(), "default", l2Rx); err == nil {
		before = stats.RxPackets
	}
	poll.Until(t, podTimeout, l2Rx+" receives "+l2Tx+"'s packets through the node's VPP", func() error {
		stats, err := s.n.PodStats(t.Context(), "default", l2Rx)
		if err == nil && (stats.RxPackets <= before || stats.RxPPS == 0) {
			err = fmt.Errorf("pod %s's testpmd counts %d received packets (%d before), %d per second", l2Rx, stats.RxPackets, before, stats.RxPPS)
		}
		return err
	})
}

func (s *suite) agentRestart(t *testing.T) {
	ctx := t.Context()
	wired := []string{redA, redB, blue, tinyA, green, l2Tx, l2Rx, claimed}
	before, err := s.n.Memifctl(ctx, "--show-secrets", "list")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.node.TraceAPI(ctx); err != nil {
		t.Fatal(err)
	}
	old, err := s.n.AgentPod(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.n.DeletePod(ctx, memifnode.Namespace, old.Name); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, agentTimeout, "a new agent pod Ready", func() error { return s.n.AgentReplaced(ctx, old.UID) })
	if err := s.n.AgentNeverRestarted(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, agentTimeout, "the new agent lists the same allocations", func() error {
		after, err := s.n.Memifctl(ctx, "--show-secrets", "list")
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(byID(after), byID(before)) {
			return fmt.Errorf("allocations now %+v, before %+v", byID(after), byID(before))
		}
		return nil
	})
	// The new agent has read VPP (its resync dumps what VPP holds): the
	// trace holds what it sent.
	poll.Until(t, agentTimeout, "the new agent's resync read the node's VPP", func() error {
		_, received, err := s.node.APIChanges(ctx)
		if err == nil && received == 0 {
			err = fmt.Errorf("the node's VPP received no API message since the agent was deleted")
		}
		return err
	})
	for _, name := range wired {
		now, err := s.n.PodMemif(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(now.JSON, s.memifs[name].JSON) {
			t.Errorf("pod %s: memif.json after the restart\n%s\nbefore\n%s", name, now.JSON, s.memifs[name].JSON)
		}
	}
	s.wantPing(t, redA, s.ip(redB))
	s.wantPing(t, blue, blueGateway)
	s.wantPing(t, green, "10.90.0.1")
	s.wantReceiving(t)
	changes, received, err := s.node.APIChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) > 0 {
		t.Errorf("the new agent changed the node's VPP: %d of the %d API messages it received since are not reads: %s", len(changes), received, strings.Join(changes, ", "))
	}
	t.Logf("agent restart with pods in red, blue, green, tiny (l3) and pods (l2): the node's VPP received %d API messages, %d changes", received, len(changes))
}

// hungPod is the pod vswitchHung creates while the node's VPP is stopped.
const hungPod = "cnf-hung"

// vswitchHung stops the node's VPP with SIGSTOP, as a hung VPP: its
// sockets stay open and nothing it is sent is answered. Within
// vswitch-health-grace (values.yaml) a new memif pod is scheduled and
// admitted, kubelet's Allocate answered without waiting on VPP, and the
// agent binds its memif; once VPP runs again, what it owes is applied and
// the pod's memif connects.
func (s *suite) vswitchHung(t *testing.T) {
	ctx := t.Context()
	s.node.VPP.Pause(t)
	if _, err := s.n.CreatePod(ctx, memifnode.VPPPod("default", hungPod, `[{"network": "red"}]`)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, agentTimeout, "pod "+hungPod+"'s memif allocated and bound while VPP is stopped", func() error {
		list, err := s.n.Memifctl(ctx, "list")
		if err != nil {
			return err
		}
		for _, memif := range list {
			if memif.PodNamespace == "default" && memif.PodName == hungPod {
				return nil
			}
		}
		return fmt.Errorf("memifctl list has no memif of default/%s: %+v", hungPod, list)
	})
	s.node.VPP.Resume(t)
	s.waitVPPPod(t, hungPod)
	s.wantPing(t, hungPod, s.ip(redA))
}

// The pods vswitchDown creates while the node's VPP is down: one through
// the device plugin, one through a claim of anyTemplate, which names no
// network (the default network pods).
const (
	downDevice  = "down-device"
	downClaim   = "down-claim"
	anyTemplate = "memif-any"
)

// vswitchDown kills the node's VPP and waits past the agent's
// vswitch-health-grace: kubelet reports no allocatable memif, so a new
// device plugin pod stays Pending with the scheduler's reason, and the
// node's ResourceSlice taints its devices, so a new claim pod stays
// unscheduled. VPP started again (the same run directory and API socket):
// both pods are scheduled and run with their memifs wired, and the pods
// that held memifs before hold the same ones.
func (s *suite) vswitchDown(t *testing.T) {
	ctx := t.Context()
	// From an agent that serves the node with VPP up: a newly started one
	// (re-registering, or within its first grace) would tell the
	// scheduler nothing of this step's VPP.
	poll.Until(t, agentTimeout, "the agent Ready and every memif allocatable", func() error {
		if err := s.n.DaemonSetReady(ctx); err != nil {
			return err
		}
		allocatable, capacity, err := s.n.Allocatable(ctx)
		if err == nil && (capacity == 0 || allocatable != capacity) {
			err = fmt.Errorf("allocatable %d of %d", allocatable, capacity)
		}
		if err == nil {
			err = s.devicesTainted(ctx, false)
		}
		return err
	})
	before, err := s.n.Memifctl(ctx, "--show-secrets", "list")
	if err != nil {
		t.Fatal(err)
	}
	template := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: anyTemplate},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "memif", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: deviceClass}}},
		}}},
	}
	if _, err := s.n.Client().ResourceV1().ResourceClaimTemplates("default").Create(ctx, template, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	s.node.Kill(t)
	t.Cleanup(func() {
		if s.node.VPP.Pid() == 0 {
			s.node.StartAgain(context.Background(), t)
		}
	})
	poll.Until(t, agentTimeout, "no allocatable "+memifnode.ResourceName+" on the node", func() error {
		allocatable, capacity, err := s.n.Allocatable(ctx)
		if err == nil && (allocatable != 0 || capacity == 0) {
			err = fmt.Errorf("allocatable %d of %d", allocatable, capacity)
		}
		return err
	})
	poll.Until(t, agentTimeout, "the node's devices tainted "+vswitchUnreachable, func() error { return s.devicesTainted(ctx, true) })
	// vswitch.conf's link-down-grace (30 s, the default) has passed once
	// the devices are tainted (devicemanager.conf vswitch-health-grace,
	// 30 s, values.yaml).
	s.wantClaimStatus(t, claimed, statusWaitLimit, "LinkUp", metav1.ConditionFalse, "VswitchUnreachable")
	if _, err := s.n.CreatePod(ctx, memifnode.VPPPod("default", downDevice, "")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.n.CreatePod(ctx, memifnode.VPPClaimPod("default", downClaim, anyTemplate)); err != nil {
		t.Fatal(err)
	}
	deviceReason := s.waitUnschedulable(t, downDevice)
	if want := "Insufficient " + memifnode.ResourceName; !strings.Contains(deviceReason, want) {
		t.Errorf("pod %s unschedulable: %q, want %q", downDevice, deviceReason, want)
	}
	claimReason := s.waitUnschedulable(t, downClaim)
	if want := "cannot allocate all claims"; !strings.Contains(claimReason, want) {
		t.Errorf("pod %s unschedulable: %q, want %q", downClaim, claimReason, want)
	}
	t.Logf("VPP down: pod %s unschedulable: %s; pod %s unschedulable: %s", downDevice, deviceReason, downClaim, claimReason)
	during, err := s.n.Memifctl(ctx, "--show-secrets", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(byID(during), byID(before)) {
		t.Errorf("allocations with VPP down %+v, before %+v", byID(during), byID(before))
	}

	s.node.StartAgain(ctx, t)
	poll.Until(t, agentTimeout, "the node's devices untainted", func() error { return s.devicesTainted(ctx, false) })
	s.waitVPPPod(t, downDevice)
	s.waitVPPPod(t, downClaim)
	after, err := s.n.Memifctl(ctx, "--show-secrets", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, held := range before {
		i := slices.IndexFunc(after, func(a memifnode.Allocation) bool { return a.AllocationID == held.AllocationID })
		if i < 0 || !reflect.DeepEqual(after[i], held) {
			t.Errorf("allocation %s of pod %s before VPP went down: %+v; after it came back: %+v", held.AllocationID, held.PodName, held, after)
		}
	}
	// The pods that held memifs reach each other through the new VPP: the
	// agent programmed it again from what it holds.
	s.wantPing(t, redA, s.ip(redB))
	s.wantClaimStatus(t, claimed, podTimeout, "LinkUp", metav1.ConditionTrue, "LinkUp")
	t.Logf("VPP back: pods %s and %s running; the %d allocations held before are held after, %d in all", downDevice, downClaim, len(before), len(after))
}

// vswitchUnreachable is the taint key the DRA driver puts on the node's
// devices while the vswitch is unreachable.
const vswitchUnreachable = "memif.contivpp.io/vswitch-unreachable"

// devicesTainted returns nil once every device of the node's
// ResourceSlices carries the vswitchUnreachable taint (tainted) or none
// does.
func (s *suite) devicesTainted(ctx context.Context, tainted bool) error {
	slices, err := s.n.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	devices, wrong := 0, 0
	for _, slice := range slices.Items {
		if slice.Spec.Driver != claims.DefaultDriverName {
			continue
		}
		for _, device := range slice.Spec.Devices {
			devices++
			has := false
			for _, taint := range device.Taints {
				has = has || (taint.Key == vswitchUnreachable && taint.Effect == resourcev1.DeviceTaintEffectNoSchedule)
			}
			if has != tainted {
				wrong++
			}
		}
	}
	if devices == 0 || wrong > 0 {
		return fmt.Errorf("%d of the %d devices of driver %s are not as wanted (tainted %s: %v)", wrong, devices, claims.DefaultDriverName, vswitchUnreachable, tainted)
	}
	return nil
}

// waitUnschedulable waits until the scheduler has found no node for pod
// name and returns why (its PodScheduled condition's message).
func (s *suite) waitUnschedulable(t *testing.T, name string) string {
	t.Helper()
	var reason string
	poll.Until(t, podTimeout, "pod default/"+name+" unschedulable", func() error {
		pod, err := s.n.Client().CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != "" {
			t.Fatalf("pod %s was scheduled on %s with the node's VPP down", name, pod.Spec.NodeName)
		}
		for _, condition := range pod.Status.Conditions {
			if condition.Type == v1.PodScheduled && condition.Status == v1.ConditionFalse && condition.Reason == v1.PodReasonUnschedulable {
				reason = condition.Message
				return nil
			}
		}
		return fmt.Errorf("pod %s: conditions %+v", name, pod.Status.Conditions)
	})
	return reason
}

// startVPPPod creates a VPP pod with the annotation networks and waits
// until it runs, its memif connected and its memif.json written.
func (s *suite) startVPPPod(t *testing.T, name, networks string) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.n.CreatePod(ctx, memifnode.VPPPod("default", name, networks)); err != nil {
		t.Fatal(err)
	}
	s.waitVPPPod(t, name)
}

// waitVPPPod waits until the VPP pod runs, its memif connected and its
// memif.json written.
func (s *suite) waitVPPPod(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	waitRunning(t, s.n, name)
	s.waitMemif(t, name)
	cli := memifnode.PodVPP(s.c, "default", name)
	poll.Every(t, podTimeout, 500*time.Millisecond, "the memif of pod "+name+" connected", func() error {
		err := cli.Connected(ctx)
		if err != nil {
			logs, _ := s.c.Kubectl(ctx, "logs", "-n", "default", name, "--tail", "20")
			err = fmt.Errorf("%w; the pod's log ends with:\n%s", err, logs)
		}
		return err
	})
}

// waitMemif waits until the agent has written the pod's memif.json with
// an interface, and keeps it.
func (s *suite) waitMemif(t *testing.T, name string) {
	t.Helper()
	poll.Until(t, agentTimeout, "memif.json of pod "+name, func() error {
		memif, err := s.n.PodMemif(t.Context(), "default", name)
		if err == nil && len(memif.File.Interfaces) == 0 {
			err = fmt.Errorf("pod %s: memif.json lists no interface: %s", name, memif.JSON)
		}
		s.memifs[name] = memif
		return err
	})
}

// wantInterface checks the pod's memif.json holds one interface of
// network in mode, on the pod's socket, and returns it.
func (s *suite) wantInterface(t *testing.T, name, network, mode string) memifjson.Interface {
	t.Helper()
	memif := s.memifs[name]
	if len(memif.File.Interfaces) != 1 {
		t.Fatalf("pod %s: memif.json %s, want one interface", name, memif.JSON)
	}
	iface := memif.File.Interfaces[0]
	if iface.Network != network || iface.Mode != mode || iface.MemifID != 0 || iface.Socket != memif.Allocation.ContainerSocket {
		t.Errorf("pod %s: memif.json %s, want memif 0 of network %s in %s mode on %s", name, memif.JSON, network, mode, memif.Allocation.ContainerSocket)
	}
	return iface
}

// ip is the pod's address, without its prefix length.
func (s *suite) ip(name string) string {
	return s.memifs[name].File.Interfaces[0].IPs[0].Addr().String()
}

// wantPing waits until the VPP of pod from gets every echo reply from
// target.
func (s *suite) wantPing(t *testing.T, from, target string) {
	t.Helper()
	cli := memifnode.PodVPP(s.c, "default", from)
	poll.Every(t, pingTimeout, 500*time.Millisecond, from+" pings "+target, func() error {
		sent, received, err := cli.Ping(t.Context(), target)
		if err == nil && (sent != vppcnf.PingCount || received != sent) {
			err = fmt.Errorf("%d sent, %d received", sent, received)
		}
		return err
	})
	t.Logf("%s pings %s: %d of %d answered", from, target, vppcnf.PingCount, vppcnf.PingCount)
}

// wantNoReply checks that the VPP of pod from gets no reply from target.
func (s *suite) wantNoReply(t *testing.T, from, target string) {
	t.Helper()
	sent, received, err := memifnode.PodVPP(s.c, "default", from).Ping(t.Context(), target)
	if err != nil {
		t.Fatal(err)
	}
	if received != 0 {
		t.Errorf("%s reaches %s: %d of %d echo requests answered, want 0", from, target, received, sent)
	}
	t.Logf("%s pings %s: %d sent, %d received", from, target, sent, received)
}

func waitRunning(t *testing.T, n *memifnode.Node, name string) {
	t.Helper()
	poll.Until(t, podTimeout, "pod default/"+name+" Running", func() error {
		_, err := n.PodRunning(context.Background(), "default", name)
		return err
	})
}

func byID(allocations []memifnode.Allocation) []memifnode.Allocation {
	sorted := append([]memifnode.Allocation{}, allocations...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].AllocationID < sorted[j].AllocationID })
	return sorted
}

// containsAll tells whether s contains every one of parts.
func containsAll(s string, parts []string) bool {
	for _, part := range parts {
		if !strings.Contains(s, part) {
			return false
		}
	}
	return true
}
