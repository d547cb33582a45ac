package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// The faults, in the table's order. Each run draws them in a seeded
// shuffle of all kinds, one shuffle after the other, so that every kind
// comes once in each round of len(faultKinds).
const (
	faultAgentKill         = "agent killed (kill -9)"
	faultUpgrade           = "chart rolled (helm upgrade)"
	faultVPPKill           = "VPP killed and restarted"
	faultVPPStop           = "VPP stopped past the health grace"
	faultKubeletRestart    = "kubelet restarted"
	faultContainerdRestart = "containerd restarted"
	faultAPIServerRestart  = "API server restarted"
	faultNodeReplaced      = "node removed and added back"
)

var faultKinds = []string{faultAgentKill, faultUpgrade, faultVPPKill, faultVPPStop, faultKubeletRestart, faultContainerdRestart, faultAPIServerRestart, faultNodeReplaced}

// refusalWindows are the faults during which the README documents that
// memif pods may be refused or wait: the node's VPP unreachable past
// vswitch-health-grace.
var refusalWindows = map[string]bool{faultVPPKill: true, faultVPPStop: true}

// faultGap bounds the pause between one fault's settling and the next.
const (
	faultGapMin = 10 * time.Second
	faultGapMax = 40 * time.Second
)

// injectFaults injects faults one at a time, each after a random pause,
// until deadline: each is injected, the cluster waited for until healthy
// again (settleLimit), and the window recorded.
func (s *soak) injectFaults(ctx context.Context, t *testing.T, rng *rand.Rand, deadline time.Time) {
	var round []string
	upgrades, added := 0, 3
	for {
		pause := faultGapMin + time.Duration(rng.Int64N(int64(faultGapMax-faultGapMin)))
		if time.Now().Add(pause).After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		if len(round) == 0 {
			round = append([]string(nil), faultKinds...)
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		nodes := s.current()
		target := nodes[rng.IntN(len(nodes))]
		s.faults.begin(kind)
		var what string
		var err error
		switch kind {
		case faultAgentKill:
			what, err = s.killAgent(ctx, target)
		case faultUpgrade:
			upgrades++
			what, err = s.upgrade(ctx, upgrades)
		case faultVPPKill:
			what, err = s.killVPP(ctx, t, target, time.Duration(rng.Int64N(int64(2*healthGrace))))
		case faultVPPStop:
			what, err = s.stopVPP(t, target)
		case faultKubeletRestart:
			what, err = s.restartKubelet(ctx, target)
		case faultContainerdRestart:
			what, err = s.restartContainerd(ctx, target)
		case faultAPIServerRestart:
			what, err = "the API server", s.c.RestartAPIServer(ctx)
		case faultNodeReplaced:
			if added >= 3+spareNodes {
				s.faults.end()
				continue
			}
			what, err = s.replaceNode(ctx, t, added)
			added++
		}
		if err == nil {
			err = poll.Wait(ctx, settleLimit, time.Second, func() error { return s.healthy(ctx) })
		}
		if err != nil {
			s.rec.violate("the cluster healthy again after each fault", fmt.Sprintf("%s (%s): %v", kind, what, err))
		}
		settled := s.faults.end()
		s.rec.fault(kind)
		t.Logf("soak: fault %s: %s, settled in %s", kind, what, settled.Round(time.Second))
	}
}

func (s *soak) killAgent(ctx context.Context, target *node) (string, error) {
	before, err := s.agents.KillAgentOn(ctx, target.host)
	if err != nil {
		return "", err
	}
	return "node " + target.name(), poll.Wait(ctx, settleLimit, time.Second, func() error {
		return s.agents.AgentRestartedOn(ctx, target.name(), before)
	})
}

// upgrade rolls the DaemonSet with a harmless change: a pod annotation
// counting the upgrades. helm is tried again while it fails (an API
// server too busy for its TLS handshake fails the upgrade before anything
// is applied): the fault is the roll, not helm's own errors.
func (s *soak) upgrade(ctx context.Context, n int) (string, error) {
	annotation := fmt.Sprintf("podAnnotations.soak-upgrade=%d", n)
	err := poll.Wait(ctx, settleLimit, 5*time.Second, func() error {
		_, err := s.agents.Helm(ctx, "upgrade", "--set-string", annotation)
		return err
	})
	return "pod annotation " + strings.TrimPrefix(annotation, "podAnnotations."), err
}

// killVPP kills the node's VPP and starts it again, empty, after down.
func (s *soak) killVPP(ctx context.Context, t *testing.T, target *node, down time.Duration) (string, error) {
	target.vpp.Kill(t)
	select {
	case <-ctx.Done():
	case <-time.After(down):
	}
	target.vpp.StartAgain(ctx, t)
	return fmt.Sprintf("node %s, down %s", target.name(), down.Round(time.Second)), nil
}

// stopVPP stops the node's VPP (SIGSTOP) for longer than the health grace,
// then lets it run again.
func (s *soak) stopVPP(t *testing.T, target *node) (string, error) {
	stopped := healthGrace + 10*time.Second
	target.vpp.VPP.Pause(t)
	time.Sleep(stopped)
	target.vpp.VPP.Resume(t)
	return fmt.Sprintf("node %s, stopped %s", target.name(), stopped), nil
}

func (s *soak) restartKubelet(ctx context.Context, target *node) (string, error) {
	if added, ok := target.host.(*cluster.Node); ok {
		return "node " + target.name(), added.RestartKubelet(ctx)
	}
	return "node " + target.name(), s.c.RestartKubelet(ctx)
}

func (s *soak) restartContainerd(ctx context.Context, target *node) (string, error) {
	if added, ok := target.host.(*cluster.Node); ok {
		return "node " + target.name(), added.RestartContainerd(ctx)
	}
	return "node " + target.name(), s.c.RestartContainerd(ctx)
}

// replaceNode removes the added node (its VPP stopped, kubelet stopped,
// its Node deleted) and adds one back, the index-th (memif-node-<index>):
// joined to the underlay at the removed node's place, its VPP started,
// the images imported and the node opted in.
func (s *soak) replaceNode(ctx context.Context, t *testing.T, index int) (string, error) {
	added := s.c.Nodes()
	if len(added) != 1 {
		return "", fmt.Errorf("the cluster has %d added nodes, want 1", len(added))
	}
	old := added[0]
	s.mu.Lock()
	var removed *node
	for i, n := range s.nodes {
		if n.name() == old.Name() {
			removed = n
			s.nodes = append(s.nodes[:i], s.nodes[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	if removed != nil {
		if err := removed.stopVPP(); err != nil {
			return "", fmt.Errorf("stop node %s's VPP: %w", old.Name(), err)
		}
	}
	if err := old.Remove(ctx); err != nil {
		return "", err
	}
	host, err := s.c.AddNode(ctx)
	if err != nil {
		return "", err
	}
	if want := spareNodeName(index); host.Name() != want {
		return "", fmt.Errorf("the node added back is %s, want %s (crossnode.conf's spare entries)", host.Name(), want)
	}
	if link, err := s.c.JoinUnderlay(host); err != nil {
		return "", err
	} else if link != s.c.UnderlayLink(1) {
		return "", fmt.Errorf("node %s's underlay link is %s, want %s (crossnode.conf's spare entries)", host.Name(), link, s.c.UnderlayLink(1))
	}
	n, err := s.startVPP(ctx, t, host, index-1)
	if err != nil {
		return "", err
	}
	if err := host.ImportOCIImage(ctx, s.vppImage); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.nodes = append(s.nodes, n)
	s.mu.Unlock()
	if err := s.agents.JoinNodes(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("node %s removed, node %s added", old.Name(), host.Name()), nil
}

// faultLog holds the faults' windows: from a fault's start until the
// cluster is healthy again.
type faultLog struct {
	mu sync.Mutex
	// active is the fault under way, "" between faults; since its start.
	active string
	since  time.Time
	// generation counts the faults that ended.
	generation int
	windows    []window
}

type window struct {
	kind       string
	start, end time.Time
}

func newFaultLog() *faultLog { return &faultLog{} }

func (f *faultLog) begin(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active, f.since = kind, time.Now()
}

// end closes the window of the fault under way and returns its length.
func (f *faultLog) end() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	f.windows = append(f.windows, window{kind: f.active, start: f.since, end: now})
	f.active = ""
	f.generation++
	return now.Sub(f.since)
}

// settledSince is how long the cluster has been settled since t: the
// time since t less the faults' windows in it (the one under way
// included), so that a bound in settled time holds however the faults
// fall.
func (f *faultLog) settledSince(t time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	settled := now.Sub(t)
	windows := f.windows
	if f.active != "" {
		windows = append(windows[:len(windows):len(windows)], window{kind: f.active, start: f.since, end: now})
	}
	for _, w := range windows {
		if overlap := earlier(w.end, now).Sub(later(w.start, t)); overlap > 0 {
			settled -= overlap
		}
	}
	return max(settled, 0)
}

// state returns the count of faults ended and whether one is under way.
func (f *faultLog) state() (generation int, active bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.generation, f.active != ""
}

// excused says whether t falls in the window, or the slack after it, of a
// fault in kinds (the one under way included).
func (f *faultLog) excused(t time.Time, kinds map[string]bool, slack time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active != "" && kinds[f.active] && !t.Before(f.since) {
		return true
	}
	for _, w := range f.windows {
		if kinds[w.kind] && !t.Before(w.start) && !t.After(w.end.Add(slack)) {
			return true
		}
	}
	return false
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
