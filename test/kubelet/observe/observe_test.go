package observe_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// Bounds on what the suite waits for on a loaded 2-core machine.
const (
	podTimeout   = 3 * time.Minute
	agentTimeout = 3 * time.Minute
)

// values are the chart's values the suite installs it with, from the
// repository root.
const values = "test/kubelet/observe/values.yaml"

// linkDownGrace is vswitch.conf's link-down-grace for the suite.
const linkDownGrace = "5s"

// metricsService is the chart's metrics Service (release memif-agent).
const metricsService = memifnode.Release + "-metrics"

// agentImage is the agent's image as Deploy imports it.
const agentImage = "memif-agent:dev"

// The suite's pods.
const (
	sender      = "tx"           // pods network, testpmd txonly
	receiver    = "rx"           // pods network, testpmd rxonly
	inRed       = "red-a"        // l3 network red
	unknownNet  = "purple"       // a network the node does not have
	wrongSecret = "wrong-secret" // presents another secret than its memif's
)

// iface is the vswitch interface of pod's memif.
func iface(pod string) string { return "memif_default_" + pod + "_" + memifnode.ContainerName + "_0" }

type suite struct {
	c *cluster.Cluster
	n *memifnode.Node
}

// TestMetricsAndEventsOnARealNode: see the package doc.
func TestMetricsAndEventsOnARealNode(t *testing.T) {
	s := start(t)
	s.startPods(t)
	t.Run("events on the pods", s.events)
	t.Run("metrics scraped through the metrics Service from a pod", s.metrics)
}

func start(t *testing.T) *suite {
	c := cluster.StartForTest(t, cluster.Options{Progress: testlog.Writer(t)})
	ctx := t.Context()
	node, err := memifnode.StartNodeVPP(ctx, c)
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
	n := memifnode.DeployReady(ctx, t, c, memifnode.Options{BinDir: binDir, Values: []string{values}, Progress: t.Logf,
		ConfigKeys: map[string]map[string]string{"vswitch.conf": {"link-down-grace": linkDownGrace}}}, agentTimeout, 80)
	return &suite{c: c, n: n}
}

func (s *suite) startPods(t *testing.T) {
	ctx := t.Context()
	pods := []*v1.Pod{
		memifnode.MemifPodForwarding("default", sender, "txonly"),
		memifnode.MemifPodForwarding("default", receiver, "rxonly"),
		annotated(memifnode.MemifPodForwarding("default", inRed, "rxonly"), `[{"network": "red"}]`),
		annotated(memifnode.MemifPodForwarding("default", unknownNet, "rxonly"), `[{"network": "purple"}]`),
		withWrongSecret(memifnode.MemifPodForwarding("default", wrongSecret, "rxonly")),
	}
	for _, pod := range pods {
		if _, err := s.n.CreatePod(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	for _, pod := range pods {
		poll.Until(t, podTimeout, "pod default/"+pod.Name+" Running", func() error {
			_, err := s.n.PodRunning(ctx, "default", pod.Name)
			return err
		})
	}
	poll.Until(t, podTimeout, "the receiver counting packets the sender sent through VPP", func() error {
		stats, err := s.n.PodStats(ctx, "default", receiver)
		if err == nil && stats.RxPackets == 0 {
			err = fmt.Errorf("pod %s received nothing yet", receiver)
		}
		return err
	})
}

// annotated gives pod's memif the spec annotation.
func annotated(pod *v1.Pod, annotation string) *v1.Pod {
	pod.Annotations = map[string]string{memifspec.AnnotationKey: annotation}
	// Its testpmd may never link: it needs no share of the node's cores.
	pod.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("10m")
	return pod
}

// withWrongSecret makes pod's testpmd present another secret than the
// MEMIF_SECRET kubelet gave it.
func withWrongSecret(pod *v1.Pod) *v1.Pod {
	command := pod.Spec.Containers[0].Command
	script := strings.Replace(command[len(command)-1], `secret="$MEMIF_SECRET"`, `secret=not-the-memif-secret`, 1)
	if script == command[len(command)-1] {
		panic("the pod command no longer passes secret=\"$MEMIF_SECRET\"")
	}
	command[len(command)-1] = script
	return pod
}

// wantEvent is an Event the agent must post on a pod.
type wantEvent struct {
	pod, eventType, reason string
	inMessage              []string
}

func (s *suite) events(t *testing.T) {
	wants := []wantEvent{
		{sender, v1.EventTypeNormal, "MemifWired", []string{"vswitch interface " + iface(sender), "in network pods", "ethernet mode"}},
		{inRed, v1.EventTypeNormal, "MemifWired", []string{"vswitch interface " + iface(inRed), "in network red", "ip mode",
			"address 10.70.0.", "/24", "gateway 10.70.0.1"}},
		{unknownNet, v1.EventTypeWarning, "MemifNetworkRefused", []string{"is not wired", `no network "purple"`, "unknown-network"}},
		{wrongSecret, v1.EventTypeWarning, "MemifWrongSecret", []string{iface(wrongSecret), "incorrect secret", "MEMIF_SECRET"}},
		{wrongSecret, v1.EventTypeWarning, "MemifLinkDown", []string{iface(wrongSecret), "link down for more than " + linkDownGrace, "incorrect secret"}},
	}
	for _, want := range wants {
		t.Run(want.pod+" "+want.reason, func(t *testing.T) {
			var found v1.Event
			poll.Until(t, agentTimeout, want.reason+" on pod default/"+want.pod, func() (err error) {
				found, err = s.event(t.Context(), want)
				return err
			})
			if found.Source.Component != "memif-agent" || found.InvolvedObject.Kind != "Pod" || found.InvolvedObject.UID == "" {
				t.Errorf("event %s from %+v on %+v; want from memif-agent on the pod, with its UID", found.Reason, found.Source, found.InvolvedObject)
			}
			t.Logf("%s %s on %s: %s", found.Type, found.Reason, want.pod, found.Message)
		})
	}
	// A pod whose memif is up is told no link trouble.
	for _, pod := range []string{sender, receiver} {
		for _, reason := range []string{"MemifWrongSecret", "MemifLinkDown"} {
			if event, err := s.event(t.Context(), wantEvent{pod: pod, eventType: v1.EventTypeWarning, reason: reason}); err == nil {
				t.Errorf("pod %s, whose memif is up, got %s: %s", pod, reason, event.Message)
			}
		}
	}
}

// event returns the Event of want on its pod, or why there is none.
func (s *suite) event(ctx context.Context, want wantEvent) (v1.Event, error) {
	list, err := s.n.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + want.pod})
	if err != nil {
		return v1.Event{}, err
	}
	var seen []string
	for _, event := range list.Items {
		seen = append(seen, event.Reason+": "+event.Message)
		if event.Type != want.eventType || event.Reason != want.reason {
			continue
		}
		missing := ""
		for _, part := range want.inMessage {
			if !strings.Contains(event.Message, part) {
				missing = part
			}
		}
		if missing == "" {
			return event, nil
		}
		return v1.Event{}, fmt.Errorf("event %s %q does not say %q", event.Reason, event.Message, missing)
	}
	return v1.Event{}, fmt.Errorf("no %s %s among %q", want.eventType, want.reason, seen)
}

func (s *suite) metrics(t *testing.T) {
	ctx := t.Context()
	var targets []string
	poll.Until(t, agentTimeout, "the ready endpoints of service "+metricsService, func() (err error) {
		targets, err = s.endpoints(ctx)
		return err
	})
	if len(targets) != 1 {
		t.Fatalf("service %s has endpoints %v, want the one agent of the node", metricsService, targets)
	}
	t.Logf("service %s: endpoint %s", metricsService, targets[0])
	wants := []struct {
		series string
		check  func(float64) bool
		want   string
	}{
		{linkSeries("memif_interface_link_up", sender, "pods"), equal(1), "1"},
		{linkSeries("memif_interface_link_up", receiver, "pods"), equal(1), "1"},
		{linkSeries("memif_interface_link_up", wrongSecret, "pods"), equal(0), "0"},
		{linkSeries("memif_interface_rx_packets_total", sender, "pods"), above(0), "> 0"},
		{linkSeries("memif_interface_rx_bytes_total", sender, "pods"), above(0), "> 0"},
		{linkSeries("memif_interface_tx_packets_total", receiver, "pods"), above(0), "> 0"},
		{linkSeries("memif_interface_rx_packets_total", wrongSecret, "pods"), equal(0), "0"},
		{`memif_network_addresses_in_use{network="red"}`, equal(1), "1"},
		{`memif_network_addresses{network="red"}`, equal(253), "253"},
		{`memif_wiring_memifs_refused_total{reason="unknown-network"}`, above(0), "> 0"},
	}
	var body string
	poll.Until(t, agentTimeout, "the metrics a pod scrapes from "+targets[0], func() error {
		var err error
		if body, err = s.scrape(t, "http://"+targets[0]+"/metrics"); err != nil {
			return err
		}
		for _, want := range wants {
			value, err := sample(body, want.series)
			if err != nil {
				return err
			}
			if !want.check(value) {
				return fmt.Errorf("%s = %v, want %s", want.series, value, want.want)
			}
		}
		return nil
	})
	for _, want := range wants {
		value, _ := sample(body, want.series)
		t.Logf("%s %v", want.series, value)
	}
}

// linkSeries is the series of a memif metric of pod's memif in network.
func linkSeries(name, pod, network string) string {
	return fmt.Sprintf(`%s{container=%q,interface=%q,memif="0",namespace="default",network=%q,pod=%q,`, name,
		memifnode.ContainerName, iface(pod), network, pod)
}

func equal(want float64) func(float64) bool  { return func(v float64) bool { return v == want } }
func above(floor float64) func(float64) bool { return func(v float64) bool { return v > floor } }

// sample reads the value of the one series of body starting with series.
func sample(body, series string) (float64, error) {
	prefix := regexp.QuoteMeta(series)
	if !strings.HasSuffix(series, ",") {
		prefix += ` `
	} else {
		prefix += `[^}]*\} `
	}
	match := regexp.MustCompile(`(?m)^`+prefix+`(\S+)$`).FindAllStringSubmatch(body, -1)
	if len(match) != 1 {
		return 0, fmt.Errorf("%d series %s in the scrape", len(match), series)
	}
	return strconv.ParseFloat(match[0][1], 64)
}

// endpoints returns address:port of each ready endpoint of the metrics
// Service, as Prometheus' service discovery finds them.
func (s *suite) endpoints(ctx context.Context) ([]string, error) {
	slices, err := s.n.Client().DiscoveryV1().EndpointSlices(memifnode.Namespace).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + metricsService})
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, slice := range slices.Items {
		var port int32
		for _, p := range slice.Ports {
			if p.Name != nil && *p.Name == "metrics" && p.Port != nil {
				port = *p.Port
			}
		}
		for _, endpoint := range slice.Endpoints {
			if port == 0 || endpoint.Conditions.Ready == nil || !*endpoint.Conditions.Ready {
				continue
			}
			for _, address := range endpoint.Addresses {
				targets = append(targets, fmt.Sprintf("%s:%d", address, port))
			}
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("service %s has no ready endpoint (%d slices)", metricsService, len(slices.Items))
	}
	return targets, nil
}

// scrapes counts the scraper pods made, for their names.
var scrapes int

// scrape runs memif-agent scrape url in a pod of the agent's image on
// the host network, and returns what it printed.
func (s *suite) scrape(t *testing.T, url string) (string, error) {
	ctx := t.Context()
	scrapes++
	name := fmt.Sprintf("scraper-%d", scrapes)
	noToken := false
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			HostNetwork:                   true,
			RestartPolicy:                 v1.RestartPolicyNever,
			AutomountServiceAccountToken:  &noToken,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []v1.Container{{
				Name: "scrape", Image: agentImage, ImagePullPolicy: v1.PullNever,
				Args: []string{"scrape", url},
			}},
		},
	}
	if _, err := s.n.CreatePod(ctx, pod); err != nil {
		return "", err
	}
	defer s.n.DeletePod(context.Background(), "default", name)
	var phase v1.PodPhase
	poll.Until(t, podTimeout, "scraper pod "+name+" done", func() error {
		got, err := s.n.Client().CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if phase = got.Status.Phase; phase != v1.PodSucceeded && phase != v1.PodFailed {
			return fmt.Errorf("pod %s is %s", name, phase)
		}
		return nil
	})
	logs, err := s.n.Client().CoreV1().Pods("default").GetLogs(name, &v1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return "", err
	}
	if phase == v1.PodFailed {
		return "", fmt.Errorf("scraper pod %s failed: %s", name, logs)
	}
	return string(logs), nil
}
