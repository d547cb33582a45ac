package soak

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/networks/shares"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// What the checks read on each node: the chart's socket-root (and under it
// trashDir, where the agent moves the released directories too big to
// remove at once) and the DRA driver's cdi-dir (node paths), kubelet's
// pod-resources socket.
const (
	socketRoot          = "/var/run/contiv/memif"
	cdiDir              = "/var/run/cdi"
	podResourcesSocket  = "/var/lib/kubelet/pod-resources/kubelet.sock"
	cdiSpecPrefix       = "memif.contivpp.io-"
	driverName          = "memif.contivpp.io"
	refusalWindowSlack  = 30 * time.Second
	podResourcesTimeout = 10 * time.Second
	trashDir            = ".trash"
)

// The invariants, as the table names them, each with how long a finding
// may last, in settled time, before it is a violation.
const (
	leftAllocation = "no allocation of a gone pod"
	leftUnbound    = "no allocation held by no pod past unbound-grace-period"
	leftDirectory  = "no socket directory without its allocation"
	leftCDISpec    = "no CDI spec (device info) of a gone claim"
	leftVPPMemif   = "no VPP memif without its allocation"
	leftAddress    = "no address in use but the allocations'"
	leftLease      = "no share Lease of a removed node"
	leftTunnel     = "no VXLAN tunnel to a removed node"
	leftRoute      = "no route to a share no node holds"
	deviceTwice    = "no device held by two allocations"
	foreignDevice  = "no pod holding another pod's device"
	checkpointSync = "the checkpoint consistent with kubelet's pod-resources"
	refusedPod     = "no memif pod refused outside the documented windows"
	rssTrend       = "agent RSS with no upward trend"
	fdTrend        = "agent fds with no upward trend"
)

var findingLimits = map[string]time.Duration{
	leftAllocation: leakLimit, leftUnbound: unboundLimit, leftDirectory: leakLimit, leftCDISpec: leakLimit,
	leftVPPMemif: leakLimit, leftAddress: leakLimit, leftLease: leakLimit, leftTunnel: leakLimit, leftRoute: leakLimit,
	deviceTwice: consistencyLimit, foreignDevice: consistencyLimit, checkpointSync: consistencyLimit,
}

// redTable is the VRF of l3 network red (values.yaml sets no id).
var redTable = netconf.DeriveID("red")

// checker checks the invariants every checkPeriod. A finding becomes a
// violation once it has lasted its limit of settled time; refusals at
// once. Only its own goroutine touches it, then final once that has
// stopped.
type checker struct {
	s        *soak
	findings map[string]*finding
	// refused are the pods whose refusal was recorded.
	refused map[types.UID]bool
	// prepareFailures are the FailedPrepareDynamicResources events seen,
	// with their counts.
	prepareFailures map[types.UID]int32
	resources       *resources
}

type finding struct {
	kind, evidence string
	first          time.Time
	seen, reported bool
}

func newChecker(s *soak) *checker {
	return &checker{s: s, findings: map[string]*finding{}, refused: map[types.UID]bool{}, prepareFailures: map[types.UID]int32{},
		resources: &resources{samples: map[string][]sample{}}}
}

func (c *checker) run(ctx context.Context) {
	for {
		c.pass(ctx)
		c.promote()
		select {
		case <-ctx.Done():
			return
		case <-time.After(checkPeriod):
		}
	}
}

// final waits, once every memif pod is gone, until nothing of them is
// left, and reports what is left after leakLimit (an unbound allocation
// only past its own limit, unbound-grace-period); then the agents'
// resources' trends.
func (c *checker) final(ctx context.Context) {
	err := poll.Wait(ctx, leakLimit, checkPeriod, func() error {
		c.pass(ctx)
		var left []string
		for _, f := range c.findings {
			if f.seen && f.kind != leftUnbound {
				left = append(left, f.kind+": "+f.evidence)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d left: %s", len(left), strings.Join(left, "; "))
		}
		return nil
	})
	if err != nil {
		for _, f := range c.findings {
			if f.seen && !f.reported && f.kind != leftUnbound {
				c.s.rec.violate(f.kind, "at the end, every memif pod gone: "+f.evidence)
				f.reported = true
			}
		}
	}
	c.promote()
	for node, samples := range c.resources.samples {
		if v := trend(samples, func(s sample) float64 { return float64(s.rssKiB) }, 1.25, 16*1024); v != "" {
			c.s.rec.violate(rssTrend, fmt.Sprintf("node %s: RSS KiB %s", node, v))
		}
		if v := trend(samples, func(s sample) float64 { return float64(s.fds) }, 1, 16); v != "" {
			c.s.rec.violate(fdTrend, fmt.Sprintf("node %s: fds %s", node, v))
		}
	}
}

// observe records a finding seen in this pass.
func (c *checker) observe(kind, key, evidence string) {
	id := kind + "|" + key
	f := c.findings[id]
	if f == nil {
		f = &finding{kind: kind, evidence: evidence, first: time.Now()}
		c.findings[id] = f
	}
	f.seen = true
}

// promote drops the findings this pass did not see and reports those that
// lasted their limit of settled time.
func (c *checker) promote() {
	for id, f := range c.findings {
		if !f.seen {
			delete(c.findings, id)
			continue
		}
		if !f.reported && c.s.faults.settledSince(f.first) > findingLimits[f.kind] {
			c.s.rec.violate(f.kind, fmt.Sprintf("%s (seen since %s)", f.evidence, f.first.Format(time.TimeOnly)))
			f.reported = true
		}
	}
}

// pass reads the cluster once and records what it finds; what cannot be
// read (a peer restarting) is skipped for this pass.
func (c *checker) pass(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, f := range c.findings {
		f.seen = false
	}
	s := c.s
	nodes := s.current()
	pods, err := s.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.keepAll()
		return
	}
	byUID := map[string]*v1.Pod{}
	byName := map[string]*v1.Pod{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		byUID[string(pod.UID)], byName[pod.Name] = pod, pod
		if reason := kubelettest.Refusal(pod); reason != "" && !c.refused[pod.UID] {
			c.refused[pod.UID] = true
			excused := s.faults.excused(time.Now(), refusalWindows, refusalWindowSlack) || (pod.Spec.NodeName != "" && !s.exists(pod.Spec.NodeName))
			s.rec.refusal(excused, fmt.Sprintf("pod %s on %s: %s", pod.Name, pod.Spec.NodeName, reason))
		}
	}
	c.countPrepareFailures(ctx)
	claimList, err := s.client.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.keepAll()
		return
	}
	claimUIDs := map[string]bool{}
	for _, claim := range claimList.Items {
		claimUIDs[string(claim.UID)] = true
	}
	leases, err := s.client.CoordinationV1().Leases(memifnode.Namespace).List(ctx, metav1.ListOptions{LabelSelector: shares.LabelNetwork})
	if err != nil {
		c.keepAll()
		return
	}
	current := map[string]bool{}
	for _, n := range nodes {
		current[n.name()] = true
	}
	heldShares := map[netip.Prefix]bool{}
	for _, lease := range leases.Items {
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		if !current[holder] {
			c.observe(leftLease, lease.Name, fmt.Sprintf("Lease %s held by %q, no node of the cluster", lease.Name, holder))
			continue
		}
		if share, err := netip.ParsePrefix(lease.Annotations[shares.AnnotationShare]); err == nil {
			heldShares[share] = true
		}
	}
	for _, n := range nodes {
		c.checkNode(ctx, n, nodes, byUID, byName, claimUIDs, heldShares)
		c.resources.sample(ctx, s.agents, n)
	}
}

// keepAll keeps every finding through a pass that could not read the
// cluster.
func (c *checker) keepAll() {
	for _, f := range c.findings {
		f.seen = true
	}
}

func (c *checker) countPrepareFailures(ctx context.Context) {
	events, err := c.s.client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedPrepareDynamicResources"})
	if err != nil {
		return
	}
	for _, event := range events.Items {
		if seen := c.prepareFailures[event.UID]; event.Count > seen {
			c.s.rec.prepareFailed(int(event.Count-seen), fmt.Sprintf("pod %s: %s", event.InvolvedObject.Name, event.Message))
			c.prepareFailures[event.UID] = event.Count
		}
	}
}

// checkNode compares what the node's agent, kubelet, VPP and socket root
// hold with the pods, claims, nodes and shares there are.
func (c *checker) checkNode(ctx context.Context, n *node, nodes []*node, byUID, byName map[string]*v1.Pod, claimUIDs map[string]bool, heldShares map[netip.Prefix]bool) {
	s := c.s
	allocations, err := s.agents.MemifctlOn(ctx, n.host, "list")
	if err != nil {
		c.keepNode(n)
		return
	}
	byDevice := map[string]memifnode.Allocation{}
	sockets, dirs := map[string]bool{}, map[string]bool{}
	for _, a := range allocations {
		sockets[a.HostSocket], dirs[filepath.Dir(a.HostSocket)] = true, true
		for _, device := range a.DeviceIDs {
			if other, held := byDevice[device]; held {
				c.observe(deviceTwice, n.name()+"/"+device, fmt.Sprintf("node %s: device %s held by allocation %s (pod %s) and %s (pod %s)",
					n.name(), device, other.AllocationID, other.PodName, a.AllocationID, a.PodName))
			}
			byDevice[device] = a
		}
		var pod *v1.Pod
		if a.PodUID != "" {
			pod = byUID[a.PodUID]
		} else if a.PodNamespace == namespace {
			pod = byName[a.PodName]
		}
		switch {
		case a.PodUID == "" && a.PodName == "":
			c.observe(leftUnbound, a.AllocationID, fmt.Sprintf("node %s: allocation %s (devices %v) held by no pod", n.name(), a.AllocationID, a.DeviceIDs))
		case pod == nil:
			c.observe(leftAllocation, a.AllocationID, fmt.Sprintf("node %s: allocation %s (devices %v, %s) of pod %s/%s (uid %s), which is gone",
				n.name(), a.AllocationID, a.DeviceIDs, a.HostSocket, a.PodNamespace, a.PodName, a.PodUID))
		case pod.Spec.NodeName != "" && pod.Spec.NodeName != n.name():
			c.observe(foreignDevice, n.name()+"/"+a.AllocationID, fmt.Sprintf("node %s: allocation %s (devices %v) bound to pod %s, which runs on %s",
				n.name(), a.AllocationID, a.DeviceIDs, a.PodName, pod.Spec.NodeName))
		}
	}
	held := 0
	for _, a := range allocations {
		for _, memif := range a.Networks {
			if memif.Network == "red" {
				held += len(memif.IPs)
			}
		}
	}
	if inUse, err := s.agents.MetricOn(ctx, n.host, "memif_network_addresses_in_use", `network="red"`); err == nil && int(inUse) != held {
		c.observe(leftAddress, n.name(), fmt.Sprintf("node %s: memif_network_addresses_in_use{network=\"red\"} %d, the allocations hold %d", n.name(), int(inUse), held))
	}
	if entries, err := os.ReadDir(n.host.HostPath(socketRoot)); err == nil {
		for _, entry := range entries {
			dir := filepath.Join(socketRoot, entry.Name())
			if entry.Name() == trashDir {
				// The agent's own: released directories wait there for
				// its remover, each for a while at most.
				released, _ := os.ReadDir(n.host.HostPath(dir))
				for _, r := range released {
					c.observe(leftDirectory, n.name()+dir+r.Name(), fmt.Sprintf("node %s: released directory %s/%s, not removed", n.name(), dir, r.Name()))
				}
				continue
			}
			if !dirs[dir] {
				c.observe(leftDirectory, n.name()+dir, fmt.Sprintf("node %s: directory %s, no allocation's", n.name(), dir))
			}
		}
	}
	if entries, err := os.ReadDir(n.host.HostPath(cdiDir)); err == nil {
		for _, entry := range entries {
			name, ok := strings.CutPrefix(entry.Name(), cdiSpecPrefix)
			if !ok || !strings.HasSuffix(name, ".json") {
				continue
			}
			uid := strings.TrimSuffix(name[strings.LastIndex(name, "_")+1:], ".json")
			if !claimUIDs[uid] {
				c.observe(leftCDISpec, n.name()+entry.Name(), fmt.Sprintf("node %s: CDI spec %s/%s of claim uid %s, which is gone", n.name(), cdiDir, entry.Name(), uid))
			}
		}
	}
	if out, err := n.vpp.CLI().Run(ctx, "show memif"); err == nil {
		for _, m := range memifSocket.FindAllStringSubmatch(out, -1) {
			if socket := m[1]; strings.HasPrefix(socket, socketRoot) && !sockets[socket] {
				c.observe(leftVPPMemif, n.name()+socket, fmt.Sprintf("node %s's VPP: a memif on %s, no allocation's", n.name(), socket))
			}
		}
	}
	others := map[netip.Addr]bool{}
	for _, other := range nodes {
		if other != n {
			others[other.underlay] = true
		}
	}
	if held, err := tunnels(ctx, n.vpp); err == nil {
		for dst := range held {
			if !others[dst] {
				c.observe(leftTunnel, n.name()+dst.String(), fmt.Sprintf("node %s's VPP: a VXLAN tunnel to %s, no node's underlay address", n.name(), dst))
			}
		}
	}
	if out, err := n.vpp.CLI().Run(ctx, fmt.Sprintf("show ip fib table %d", redTable)); err == nil {
		for _, m := range shareRoute.FindAllStringSubmatch(out, -1) {
			if share := netip.MustParsePrefix(m[1]); !heldShares[share] {
				c.observe(leftRoute, n.name()+share.String(), fmt.Sprintf("node %s's VPP: a route to %s in red's table %d, no node's share", n.name(), share, redTable))
			}
		}
	}
	c.checkPodResources(ctx, n, byDevice, byName)
}

// keepNode keeps the node's findings through a pass that could not read
// its agent.
func (c *checker) keepNode(n *node) {
	for _, f := range c.findings {
		if strings.Contains(f.evidence, "node "+n.name()) {
			f.seen = true
		}
	}
}

var (
	// memifSocket reads a socket's file name in `show memif`'s sockets
	// table ("  1   yes (2)     /var/run/contiv/memif/x/memif.sock").
	memifSocket = regexp.MustCompile(`(?m)^\s+\d+\s+(?:no|yes(?: \(\d+\))?)\s+(\S+)\s*$`)
	// shareRoute reads a node's share of red (a /26, networks.conf's
	// node-prefix-length) in `show ip fib`.
	shareRoute = regexp.MustCompile(`(?m)^(10\.70\.0\.\d+/26)\s`)
	// vxlanTunnel reads `show vxlan tunnel`.
	vxlanTunnel = regexp.MustCompile(`src (\S+) dst (\S+) `)
)

// tunnels are the destinations of the VXLAN tunnels vswitch holds.
func tunnels(ctx context.Context, vswitch *memifnode.NodeVPP) (map[netip.Addr]bool, error) {
	out, err := vswitch.CLI().Run(ctx, "show vxlan tunnel")
	if err != nil {
		return nil, err
	}
	held := map[netip.Addr]bool{}
	for _, m := range vxlanTunnel.FindAllStringSubmatch(out, -1) {
		if dst, err := netip.ParseAddr(m[2]); err == nil {
			held[dst] = true
		}
	}
	return held, nil
}

// checkPodResources compares the devices kubelet's pod-resources gives
// each pod on the node with the agent's allocations: each device kubelet
// gave a pod is held by an allocation of that pod, and each allocation of
// a pod kubelet lists holds devices kubelet gave it.
func (c *checker) checkPodResources(ctx context.Context, n *node, byDevice map[string]memifnode.Allocation, byName map[string]*v1.Pod) {
	listed, err := podResources(ctx, n)
	if err != nil {
		return
	}
	given := map[string]map[string]bool{}
	for _, pod := range listed {
		if pod.Namespace != namespace || byName[pod.Name] == nil {
			continue
		}
		devices := map[string]bool{}
		for _, container := range pod.Containers {
			for _, d := range container.Devices {
				if d.ResourceName == memifnode.ResourceName {
					for _, id := range d.DeviceIds {
						devices[id] = true
					}
				}
			}
			for _, dynamic := range container.DynamicResources {
				for _, r := range dynamic.ClaimResources {
					if r.DriverName == driverName {
						devices[r.DeviceName] = true
					}
				}
			}
		}
		given[pod.Name] = devices
		for device := range devices {
			a, held := byDevice[device]
			switch {
			case !held:
				c.observe(checkpointSync, n.name()+"/"+device, fmt.Sprintf("node %s: kubelet gave pod %s device %s, which no allocation of the agent holds", n.name(), pod.Name, device))
			case a.PodName != "" && (a.PodNamespace != pod.Namespace || a.PodName != pod.Name):
				c.observe(foreignDevice, n.name()+"/"+device, fmt.Sprintf("node %s: kubelet gave pod %s device %s, which the agent's allocation %s binds to pod %s/%s",
					n.name(), pod.Name, device, a.AllocationID, a.PodNamespace, a.PodName))
			}
		}
	}
	for device, a := range byDevice {
		devices, listed := given[a.PodName]
		if a.PodNamespace == namespace && listed && len(devices) > 0 && !devices[device] {
			c.observe(checkpointSync, n.name()+"/"+a.AllocationID+"/"+device, fmt.Sprintf("node %s: the agent's allocation %s binds device %s to pod %s, which kubelet gave %v",
				n.name(), a.AllocationID, device, a.PodName, keys(devices)))
		}
	}
}

func keys(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	return out
}

// podResources lists the pods and their resources through kubelet's
// pod-resources API on the node.
func podResources(ctx context.Context, n *node) ([]*podresourcesv1.PodResources, error) {
	conn, err := grpc.NewClient("unix://"+n.host.HostPath(podResourcesSocket), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, podResourcesTimeout)
	defer cancel()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, err
	}
	return resp.PodResources, nil
}

func nodeReady(n *v1.Node) bool {
	for _, condition := range n.Status.Conditions {
		if condition.Type == v1.NodeReady {
			return condition.Status == v1.ConditionTrue
		}
	}
	return false
}

// resources are the agents' RSS and open fds, sampled by node.
type resources struct {
	samples map[string][]sample
}

type sample struct {
	rssKiB, fds int
}

// sample reads the RSS and fds of the node's agent from /proc.
func (r *resources) sample(ctx context.Context, agents *memifnode.Node, n *node) {
	pid, err := agents.AgentPIDOn(ctx, n.host)
	if err != nil {
		return
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return
	}
	scanner := bufio.NewScanner(bytes.NewReader(status))
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "VmRSS:"); ok {
			if kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB")); err == nil {
				r.samples[n.name()] = append(r.samples[n.name()], sample{rssKiB: kib, fds: len(fds)})
			}
		}
	}
}

// peak is the highest RSS and fds of any sample.
func (r *resources) peak() (rssKiB, fds int) {
	for _, samples := range r.samples {
		for _, s := range samples {
			rssKiB, fds = max(rssKiB, s.rssKiB), max(fds, s.fds)
		}
	}
	return rssKiB, fds
}

// trend compares the first and last thirds of samples: an upward trend is
// the last third's lowest value above the first third's highest times
// factor plus slack. It describes the trend, or returns "" for none (or
// too few samples to tell).
func trend(samples []sample, value func(sample) float64, factor, slack float64) string {
	if len(samples) < 12 {
		return ""
	}
	third := len(samples) / 3
	firstMax, lastMin := 0.0, value(samples[len(samples)-1])
	for _, s := range samples[:third] {
		firstMax = max(firstMax, value(s))
	}
	for _, s := range samples[len(samples)-third:] {
		lastMin = min(lastMin, value(s))
	}
	if lastMin > firstMax*factor+slack {
		return fmt.Sprintf("rose: the last third's lowest %.0f above the first third's highest %.0f (of %d samples)", lastMin, firstMax, len(samples))
	}
	return ""
}
