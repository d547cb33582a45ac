package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/memifnode"
)

// The kinds of memif pods the churn creates, in the table's order. Each
// but the hostile one comes as a pair, one pod on each node, that ping
// each other across the nodes.
const (
	podRed     = "device plugin, red (l3)"
	podLab     = "device plugin, lab (l2)"
	podClaim   = "DRA claim, red (l3)"
	podTwo     = "device plugin, two memifs (red, lab)"
	podHostile = "hostile, fills its /run/vpp"
)

var podKinds = []string{podRed, podLab, podClaim, podTwo, podHostile}

// kindWeights are how often each kind is drawn, of their sum.
var kindWeights = map[string]int{podRed: 3, podLab: 2, podClaim: 2, podTwo: 2, podHostile: 1}

// redTemplate makes claims of the chart's deviceClass whose opaque
// MemifConfig puts the memif in red.
const (
	redTemplate = "memif-red"
	deviceClass = "memif.contivpp.io"
)

// hostileFiles is how many files the hostile pod writes into its /run/vpp.
const hostileFiles = 2000

// lifetime bounds how long a unit of pods runs once wired.
const (
	lifetimeMin = 20 * time.Second
	lifetimeMax = 80 * time.Second
)

// churner creates units of memif pods at the configured rate, at most
// maxPods alive at once, each run by a goroutine of its own until its
// lifetime ends.
type churner struct {
	s     *soak
	rng   *rand.Rand
	units sync.WaitGroup

	mu   sync.Mutex
	live int
}

func newChurner(s *soak, rng *rand.Rand) *churner { return &churner{s: s, rng: rng} }

// run creates units until noMore closes, then waits for every unit to
// have run out its lifetime and deleted its pods.
func (ch *churner) run(ctx context.Context, noMore <-chan struct{}) {
	defer ch.units.Wait()
	for seq := 1; ; seq++ {
		kind := ch.pick()
		size := 2
		if kind == podHostile {
			size = 1
		}
		nodes, ok := ch.room(ctx, noMore, size)
		if !ok {
			return
		}
		u := &unit{kind: kind, lifetime: lifetimeMin + time.Duration(ch.rng.Int64N(int64(lifetimeMax-lifetimeMin)))}
		for i := range size {
			target := nodes[i%len(nodes)]
			if size == 1 {
				target = nodes[ch.rng.IntN(len(nodes))]
			}
			u.pods = append(u.pods, &unitPod{name: fmt.Sprintf("s%04d-%c", seq, 'a'+i), node: target})
			if kind == podLab {
				// Addresses of their own in lab, which all its pods share.
				u.pods[i].l2Address = fmt.Sprintf("10.%d.%d.%d", 100+seq/250%100, seq%250, i+1)
			}
		}
		ch.units.Add(1)
		go func() {
			defer ch.units.Done()
			defer ch.release(size)
			ch.s.runUnit(ctx, u)
		}()
		pause := time.Duration(float64(size) / ch.s.cfg.rate * float64(time.Minute))
		select {
		case <-noMore:
			return
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}

func (ch *churner) pick() string {
	total := 0
	for _, kind := range podKinds {
		total += kindWeights[kind]
	}
	n := ch.rng.IntN(total)
	for _, kind := range podKinds {
		if n < kindWeights[kind] {
			return kind
		}
		n -= kindWeights[kind]
	}
	return podRed
}

// room waits until size more pods fit under maxPods and the cluster has
// two nodes, takes the room and returns the nodes' names; false once
// noMore closes.
func (ch *churner) room(ctx context.Context, noMore <-chan struct{}, size int) ([]string, bool) {
	for {
		nodes := ch.s.current()
		ch.mu.Lock()
		if ch.live+size <= ch.s.cfg.maxPods && len(nodes) == 2 {
			ch.live += size
			ch.mu.Unlock()
			return []string{nodes[0].name(), nodes[1].name()}, true
		}
		ch.mu.Unlock()
		select {
		case <-noMore:
			return nil, false
		case <-ctx.Done():
			return nil, false
		case <-time.After(time.Second):
		}
	}
}

func (ch *churner) release(size int) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.live -= size
}

// unit is one or two memif pods created and deleted together.
type unit struct {
	kind     string
	lifetime time.Duration
	pods     []*unitPod
	// verified is the count of faults ended when the unit last passed its
	// check.
	verified int
}

type unitPod struct {
	name, node string
	// address is the pod's red address, once read from its VPP.
	address string
	// l2Address is the address the soak sets in a lab pod's VPP.
	l2Address string
}

// errLost is a unit's pod gone with its node, or refused: nothing more
// to wait for.
var errLost = errors.New("lost")

// runUnit creates the unit's pods, waits until they run wired and ping
// each other (again after each fault), keeps them for their lifetime and
// deletes them.
func (s *soak) runUnit(ctx context.Context, u *unit) {
	defer s.deleteUnit(u)
	created := time.Now()
	for _, p := range u.pods {
		pod := s.podOf(u.kind, p)
		err := poll.Wait(ctx, settleLimit+wiredLimit, 2*time.Second, func() error {
			_, err := s.client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				s.rec.violate("memif pods created", fmt.Sprintf("pod %s: %v", p.name, err))
			}
			return
		}
		s.rec.created(u.kind)
	}
	if !s.verify(ctx, u, created) {
		return
	}
	s.rec.logf("soak: %s %v wired and pinging after %s", u.kind, u.names(), time.Since(created).Round(time.Second))
	end := time.Now().Add(u.lifetime)
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		if generation, active := s.faults.state(); !active && generation > u.verified {
			if !s.verify(ctx, u, time.Now()) {
				return
			}
		}
	}
}

// verify waits until the unit's pods run wired and ping each other, for
// wiredLimit of settled time since since; a unit that does not is a
// violation. It returns false when the unit is over: lost, refused, out
// of time, or the test ending.
func (s *soak) verify(ctx context.Context, u *unit, since time.Time) bool {
	for {
		generation, _ := s.faults.state()
		err := s.checkUnit(ctx, u)
		if err == nil {
			u.verified = generation
			return true
		}
		if errors.Is(err, errLost) {
			s.rec.lost(len(u.pods))
			return false
		}
		if s.faults.settledSince(since) > wiredLimit {
			s.rec.violate("every memif pod wired and pinging its peer within "+wiredLimit.String()+" of settled time",
				fmt.Sprintf("%s pods %s: %v", u.kind, u.names(), err))
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(3 * time.Second):
		}
	}
}

func (u *unit) names() []string {
	var names []string
	for _, p := range u.pods {
		names = append(names, p.name+"@"+p.node)
	}
	return names
}

// checkUnit returns nil when every pod of the unit runs, its memifs
// connected, and each pings its peer; errLost when a pod is gone with its
// node or refused.
func (s *soak) checkUnit(ctx context.Context, u *unit) error {
	for _, p := range u.pods {
		pod, err := s.client.CoreV1().Pods(namespace).Get(ctx, p.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("pod %s gone: %w", p.name, errLost)
		case err != nil:
			return err
		case !s.exists(p.node):
			return fmt.Errorf("pod %s's node %s removed: %w", p.name, p.node, errLost)
		case kubelettest.Refusal(pod) != "":
			return fmt.Errorf("pod %s refused: %s: %w", p.name, kubelettest.Refusal(pod), errLost)
		case pod.Status.Phase != v1.PodRunning:
			return fmt.Errorf("pod %s is %s: %s", p.name, pod.Status.Phase, podConditions(pod))
		}
	}
	if u.kind == podHostile {
		return nil
	}
	for _, p := range u.pods {
		cli := memifnode.PodVPP(s.c, namespace, p.name)
		if err := cli.Connected(ctx); err != nil {
			return fmt.Errorf("pod %s: %w", p.name, err)
		}
		switch u.kind {
		case podLab:
			// An address set again answers an error; the ping tells.
			_, _ = cli.Run(ctx, "set interface ip address memif1/0 "+p.l2Address+"/16")
		default:
			if p.address == "" {
				out, err := cli.Run(ctx, "show interface address")
				if err != nil {
					return fmt.Errorf("pod %s: %w", p.name, err)
				}
				m := l3Address.FindStringSubmatch(out)
				if m == nil {
					return fmt.Errorf("pod %s's VPP holds no address in red: %s", p.name, out)
				}
				p.address = m[1]
			}
		}
	}
	for i, p := range u.pods {
		peer := u.pods[1-i]
		target := peer.address
		if u.kind == podLab {
			target = peer.l2Address
		}
		sent, received, err := memifnode.PodVPP(s.c, namespace, p.name).Ping(ctx, target)
		if err == nil && (sent != vppcnf.PingCount || received != sent) {
			err = fmt.Errorf("%d sent, %d received", sent, received)
		}
		if err != nil {
			return fmt.Errorf("pod %s pings %s (pod %s): %w", p.name, target, peer.name, err)
		}
	}
	return nil
}

var l3Address = regexp.MustCompile(`L3 (\d+\.\d+\.\d+\.\d+)/\d+`)

// deleteUnit deletes the unit's pods, retried through an API server
// restart, and waits until they are gone.
func (s *soak) deleteUnit(u *unit) {
	ctx, cancel := context.WithTimeout(context.Background(), settleLimit)
	defer cancel()
	for _, p := range u.pods {
		err := poll.Wait(ctx, settleLimit, 2*time.Second, func() error {
			err := s.agents.DeletePod(ctx, namespace, p.name)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		if err != nil {
			s.rec.violate("memif pods deleted", fmt.Sprintf("pod %s: %v", p.name, err))
		}
	}
	for _, p := range u.pods {
		if err := poll.Wait(ctx, settleLimit, 2*time.Second, func() error { return s.agents.PodGone(ctx, namespace, p.name) }); err != nil {
			s.rec.violate("memif pods deleted", fmt.Sprintf("pod %s: %v", p.name, err))
		}
	}
}

// podOf is the pod of kind for p, on p's node.
func (s *soak) podOf(kind string, p *unitPod) *v1.Pod {
	var pod *v1.Pod
	switch kind {
	case podRed:
		pod = memifnode.VPPPod(namespace, p.name, `[{"network": "red"}]`)
	case podLab:
		pod = memifnode.VPPPod(namespace, p.name, `[{"network": "lab"}]`)
	case podTwo:
		pod = memifnode.VPPPod(namespace, p.name, `[{"network": "red", "memif-id": 0}, {"network": "lab", "memif-id": 1}]`)
	case podClaim:
		pod = memifnode.VPPClaimPod(namespace, p.name, redTemplate)
	case podHostile:
		pod = memifnode.MemifPod(namespace, p.name)
		pod.Spec.Containers[0].Command = []string{"/bin/sh", "-c", fmt.Sprintf(
			`i=0; while [ $i -lt %d ]; do echo junk > /run/vpp/junk-$i; i=$((i+1)); done; exec sleep 100000`, hostileFiles)}
	}
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": p.node}
	return pod
}

// createRedClaimTemplate makes the ResourceClaimTemplate redTemplate.
func createRedClaimTemplate(ctx context.Context, client kubernetes.Interface) error {
	config := fmt.Sprintf(`{"apiVersion": %q, "kind": %q, "network": "red"}`, memifspec.APIVersion, memifspec.Kind)
	template := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: redTemplate},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "memif", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: deviceClass}}},
			Config: []resourcev1.DeviceClaimConfiguration{{Requests: []string{"memif"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: claims.DefaultDriverName, Parameters: runtime.RawExtension{Raw: []byte(config)}},
			}}},
		}}},
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(namespace).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the claim template %s: %w", redTemplate, err)
	}
	return nil
}

// podConditions says what keeps pod from Running: the conditions not
// True and the containers waiting, with their reasons.
func podConditions(pod *v1.Pod) string {
	var out string
	for _, c := range pod.Status.Conditions {
		if c.Status != v1.ConditionTrue {
			out += fmt.Sprintf("%s=%s %s %s; ", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			out += fmt.Sprintf("%s waiting %s %s; ", cs.Name, w.Reason, w.Message)
		}
	}
	return out
}
