package memifwiring_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

// rateWindow is how long received packets are counted.
const rateWindow = 2 * time.Second

// BenchmarkPodToPodThroughVPP measures 64-byte packets per second from a
// sending pod's DPDK testpmd (txonly) through VPP to a receiving pod's
// testpmd (rxonly), counted at the receiver, with the pods' memifs in a
// bridge domain and in an L2 cross-connect, each against a baseline
// measured over the same window: DPDK to DPDK over one memif pair (a
// testpmd memif server counting what a txonly client sends), without a
// vswitch. Both run at once, so that both see the same machine load; the
// figure to compare is vpp/direct.
func BenchmarkPodToPodThroughVPP(b *testing.B) {
	for _, bc := range []struct{ name, wiringConf string }{
		{"bridge-domain", "bridge-domain: pods\n"},
		{"l2-xconnect", xconnectConf},
	} {
		b.Run(bc.name, func(b *testing.B) { benchmarkPodToPod(b, bc.wiringConf) })
	}
}

func benchmarkPodToPod(b *testing.B, wiringConf string) {
	v := vpp.Start(b)
	a := startVPPAgent(b, v, vppAgentDir(b), nil, wiringConf)
	sender, receiver := a.addOneMemifPod(b, "sender", "memif-000"), a.addOneMemifPod(b, "receiver", "memif-001")
	rx := startPodSide(b, receiver.Annotations[dmapi.AnnotationSocketHost], receiver.Envs[dmapi.EnvMemifSecret], "rxonly")
	startPodSide(b, sender.Annotations[dmapi.AnnotationSocketHost], sender.Envs[dmapi.EnvMemifSecret], "txonly")
	direct := startDirectPair(b)
	for _, side := range []*testpmd.Vswitch{rx, direct} {
		if err := waitLinkUp(b, side); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var vppRate, directRate float64
	for b.Loop() {
		rates, err := measureTogether(b, rx, direct)
		if err != nil {
			b.Fatal(err)
		}
		vppRate += rates[0]
		directRate += rates[1]
	}
	b.ReportMetric(vppRate/float64(b.N), "vpp-pps")
	b.ReportMetric(directRate/float64(b.N), "direct-pps")
	b.ReportMetric(vppRate/directRate, "vpp/direct")
}

// measureTogether counts each side's received packets per second over the
// same window.
func measureTogether(b *testing.B, sides ...*testpmd.Vswitch) ([]float64, error) {
	rates := make([]float64, len(sides))
	errs := make([]error, len(sides))
	var wg sync.WaitGroup
	for i, side := range sides {
		wg.Go(func() { rates[i], errs[i] = side.RxRate(b.Context(), rateWindow) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return rates, nil
}

// startDirectPair runs the baseline: a testpmd memif server (rxonly) and a
// txonly client on a plain directory; it returns the server.
func startDirectPair(b *testing.B) *testpmd.Vswitch {
	dir, err := os.MkdirTemp("", "direct-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	raw := make([]byte, 12)
	rand.Read(raw)
	secret := base64.RawURLEncoding.EncodeToString(raw)
	socket := filepath.Join(dir, "memif.sock")
	server, err := testpmd.StartVswitch(b.Context(), testpmd.VswitchConfig{Socket: socket, Secret: secret, LogPath: filepath.Join(dir, "server.log")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { server.Stop() })
	startPodSide(b, socket, secret, "txonly")
	// Cleanups run last first: the server stops before its client, since
	// testpmd's server can crash when its client leaves under traffic.
	b.Cleanup(func() { server.Stop() })
	return server
}

// BenchmarkMemifCreate measures how long a pod's memif takes to exist:
// from AddPod to the event done, which includes the KV scheduler's commit,
// with VPP and, as baseline, with the vswitch stand-in (no VPP). The two
// agents take turns in each iteration, so that both see the same load on
// a shared machine; vpp/stand-in is the figure to compare. Under the race
// detector the VPP agent's iterations run first and it stops before the
// stand-in starts: two KV schedulers of one process that process at once
// (the VPP agent's link states arrive whenever VPP tells them) share
// vpp-agent's package-level statistics, which the detector reports. Each
// pod is deleted again outside the timer. vpp-messages/op counts the
// binary API messages VPP received per iteration (VPP's API trace): the
// create's and the delete's, and what the agent sent meanwhile on its own
// (link watcher, health check).
func BenchmarkMemifCreate(b *testing.B) {
	v := vpp.Start(b)
	vppAgent := startVPPAgent(b, v, vppAgentDir(b), nil, "").testAgent
	var took [2]time.Duration
	v.TraceAPI(b)
	if raceDetector {
		for i := 0; b.Loop(); i++ {
			took[0] += createMemif(b, vppAgent, i)
		}
		vppAgent.Stop()
		standIn := startAgent(b)
		for i := range b.N {
			took[1] += createMemif(b, standIn, i)
		}
	} else {
		standIn := startAgent(b)
		for i := 0; b.Loop(); i++ {
			took[0] += createMemif(b, vppAgent, i)
			took[1] += createMemif(b, standIn, i)
		}
	}
	b.ReportMetric(float64(len(v.TracedAPI(b)))/float64(b.N), "vpp-messages/op")
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N), "vpp-ns/create")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N), "stand-in-ns/create")
	b.ReportMetric(float64(took[0])/float64(took[1]), "vpp/stand-in")
}

// createMemif makes pod i with one memif on agent a, deletes it again
// outside the timer, and returns how long the AddPod took to be done.
func createMemif(b *testing.B, a *testAgent, i int) time.Duration {
	b.StopTimer()
	allocation := a.allocate(b, "memif-000")
	pod := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: fmt.Sprintf("pod-%d", i)}, UID: fmt.Sprintf("uid-%d", i)}
	b.StartTimer()
	start := time.Now()
	a.Push(b, &podapi.AddPod{Pod: pod, Containers: []podapi.PodContainer{container("app", allocation)}})
	a.Barrier(b)
	took := time.Since(start)
	b.StopTimer()
	a.Push(b, &podapi.DeletePod{Pod: pod})
	a.Barrier(b)
	b.StartTimer()
	return took
}
