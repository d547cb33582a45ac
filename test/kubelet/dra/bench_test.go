package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	resourcev1 "k8s.io/client-go/kubernetes/typed/resource/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
	"github.com/contivpp/memif-agent/test/kubelet/kit/podbench"
)

// BenchmarkPodCreateToRunning measures, on the real node, how long a pod
// takes from its creation to Running when its memif comes from a
// ResourceClaim (scheduler allocation, kubelet's NodePrepareResources, the
// CDI spec) and, as the baseline in the same run, from the extended
// resource (kubelet's device plugin Allocate). Each iteration makes one pod
// of each kind, alternating which goes first, and deletes them before the
// next. It reports the medians and their ratio (claim/extended), and the
// medians of how long the agent took to answer kubelet's
// NodePrepareResources and Allocate calls for these pods, timed as each
// call arrives and is answered on the agent's gRPC servers, and their ratio
// (prepare/allocate). The driver's reads of claims from the API server are
// timed apart (their median), and counted: those read ahead, as the pod is
// bound, and those made during a NodePrepareResources call (kubeletplugin's
// read of the claim before the driver is called, when no copy read ahead
// was handed to it), per call, and the median time a call waited for a
// read ahead of its claims still under way as it arrived, and the share
// of calls that found their claims prepared ahead (their CDI specs
// written as they arrived), and the claim status writer's writes per
// claim (its status with the memif resolved, and again as the link's
// state changes; none at unprepare, the claim being deleted with its
// pod). Run it with
// -benchtime=20x or more for p50 over ≥ 20 pods of each kind.
func BenchmarkPodCreateToRunning(b *testing.B) {
	c, client := startCluster(b, cluster.Options{})
	ctx := context.Background()
	cfg := config.Default()
	// Enough devices for every iteration: no Allocate waits for the
	// release of a deleted pod's memif.
	cfg.DeviceCount, cfg.ClaimDeviceCount = 64, 4
	calls := &callTimes{byMethod: map[string][]time.Duration{}, readEnds: map[string]time.Time{}, cdiDir: c.HostPath("/var/run/cdi")}
	a := startAgentWith(b, c, timedClaimReads{client, calls}, cfg, calls.intercept)
	poll.Until(b, waitLimit, "the node's memifs published and allocatable", func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, cluster.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if quantity := node.Status.Allocatable["contivpp.io/memif"]; quantity.Value() != int64(cfg.DeviceCount) {
			return fmt.Errorf("allocatable memifs %v", quantity.String())
		}
		if slices := nodeSlices(ctx, client); len(slices) != 1 {
			return fmt.Errorf("slices of %s: %d", cluster.NodeName, len(slices))
		}
		return nil
	})
	podbench.Compare(b, podbench.Kinds{Subject: "claim", Baseline: "extended"}, func(i int, claim bool) time.Duration {
		return podToRunning(ctx, b, client, a, fmt.Sprintf("bench-%d-%v", i, claim), claim)
	})
	prepares, allocates := calls.of("NodePrepareResources"), calls.of("Allocate")
	if len(prepares) < b.N || len(allocates) < b.N {
		b.Fatalf("kubelet called NodePrepareResources %d times and Allocate %d times for %d pods of each kind", len(prepares), len(allocates), b.N)
	}
	prepareMedian, allocateMedian := podbench.Median(prepares), podbench.Median(allocates)
	b.ReportMetric(float64(prepareMedian.Microseconds()), "prepare-us/call")
	b.ReportMetric(float64(allocateMedian.Microseconds()), "allocate-us/call")
	b.ReportMetric(float64(prepareMedian)/float64(allocateMedian), "prepare/allocate")
	ahead, inCall := calls.of(claimReadAhead), calls.of(claimReadInCall)
	if len(ahead)+len(inCall) < len(prepares) {
		b.Fatalf("the driver read %d claims ahead and %d during calls for %d NodePrepareResources calls", len(ahead), len(inCall), len(prepares))
	}
	b.ReportMetric(float64(podbench.Median(append(ahead, inCall...)).Microseconds()), "claim-read-us/read")
	b.ReportMetric(float64(len(inCall))/float64(len(prepares)), "reads-in-call/prepare")
	b.ReportMetric(float64(len(ahead))/float64(len(prepares)), "reads-ahead/prepare")
	b.ReportMetric(float64(podbench.Median(calls.of(claimReadWait)).Microseconds()), "read-wait-us/call")
	b.ReportMetric(float64(calls.preparedAheadCalls())/float64(len(prepares)), "prepared-ahead/prepare")
	b.ReportMetric(float64(len(calls.of(claimStatusWrite)))/float64(b.N), "status-writes/claim")
}

// The names callTimes records the driver's claim reads under: made during
// one of kubelet's calls (the read's context carries inKubeletCall), or
// not (read ahead).
// claimReadWait is the name of how long each NodePrepareResources call
// waited for reads ahead of its claims still under way as it arrived.
const (
	claimReadInCall = "claim read in a call"
	claimReadAhead  = "claim read ahead"
	claimReadWait   = "claim read waited for"
	// claimStatusWrite: the claim status writer's writes.
	claimStatusWrite = "claim status write"
)

// inKubeletCall marks the context of kubelet's calls to the agent.
type inKubeletCall struct{}

// timedClaimReads is the driver's API server client, timing each read of
// a ResourceClaim into calls: the driver's reads ahead, and kubeletplugin's
// at a NodePrepareResources call when it got no copy read ahead.
type timedClaimReads struct {
	kubernetes.Interface
	calls *callTimes
}

func (c timedClaimReads) ResourceV1() resourcev1.ResourceV1Interface {
	return timedResourceV1{c.Interface.ResourceV1(), c.calls}
}

type timedResourceV1 struct {
	resourcev1.ResourceV1Interface
	calls *callTimes
}

func (r timedResourceV1) ResourceClaims(namespace string) resourcev1.ResourceClaimInterface {
	return timedClaims{r.ResourceV1Interface.ResourceClaims(namespace), namespace, r.calls}
}

type timedClaims struct {
	resourcev1.ResourceClaimInterface
	namespace string
	calls     *callTimes
}

func (c timedClaims) Get(ctx context.Context, name string, opts metav1.GetOptions) (*resourceapi.ResourceClaim, error) {
	if opts.ResourceVersion == "0" {
		// The claim status writer's read, from the API server's cache,
		// before it writes the claim's status: after kubelet's call.
		return c.ResourceClaimInterface.Get(ctx, name, opts)
	}
	start := time.Now()
	claim, err := c.ResourceClaimInterface.Get(ctx, name, opts)
	if ctx.Value(inKubeletCall{}) != nil {
		c.calls.record(claimReadInCall, time.Since(start))
	} else {
		c.calls.readAhead(c.namespace+"/"+name, start)
	}
	return claim, err
}

// UpdateStatus is the claim status writer's write, timed.
func (c timedClaims) UpdateStatus(ctx context.Context, claim *resourceapi.ResourceClaim, opts metav1.UpdateOptions) (*resourceapi.ResourceClaim, error) {
	start := time.Now()
	updated, err := c.ResourceClaimInterface.UpdateStatus(ctx, claim, opts)
	c.calls.record(claimStatusWrite, time.Since(start))
	return updated, err
}

// callTimes records how long the agent took to answer each of kubelet's
// gRPC calls, by method name, and when the reads ahead of claims ended.
type callTimes struct {
	mu       sync.Mutex
	byMethod map[string][]time.Duration
	// readEnds is when the last read ahead of each claim (namespace/name)
	// ended.
	readEnds map[string]time.Time
	// cdiDir, when set, is the driver's CDI directory; preparedAhead
	// counts the NodePrepareResources calls that find their claims' specs
	// there as they arrive (the driver prepared the claims ahead).
	cdiDir        string
	preparedAhead int
}

// readAhead records a read ahead of claim (namespace/name) begun at start
// and ending now.
func (r *callTimes) readAhead(claim string, start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := time.Now()
	r.byMethod[claimReadAhead] = append(r.byMethod[claimReadAhead], end.Sub(start))
	r.readEnds[claim] = end
}

// waitedForReads records how long the NodePrepareResources call request,
// arrived at start, waited for the reads ahead of its claims.
func (r *callTimes) waitedForReads(request *drapb.NodePrepareResourcesRequest, start time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var waited time.Duration
	for _, claim := range request.Claims {
		if end, ok := r.readEnds[claim.Namespace+"/"+claim.Name]; ok {
			waited = max(waited, end.Sub(start))
		}
	}
	r.byMethod[claimReadWait] = append(r.byMethod[claimReadWait], waited)
}

// intercept is a grpc.UnaryServerInterceptor timing the handler, whose
// context it marks inKubeletCall.
func (r *callTimes) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	prepare, isPrepare := req.(*drapb.NodePrepareResourcesRequest)
	if isPrepare && r.cdiDir != "" && r.specsWritten(prepare) {
		r.mu.Lock()
		r.preparedAhead++
		r.mu.Unlock()
	}
	start := time.Now()
	response, err := handler(context.WithValue(ctx, inKubeletCall{}, info.FullMethod), req)
	if isPrepare {
		r.waitedForReads(prepare, start)
	}
	r.record(path.Base(info.FullMethod), time.Since(start))
	return response, err
}

// specsWritten says whether the CDI spec of each claim of request is in
// cdiDir.
func (r *callTimes) specsWritten(request *drapb.NodePrepareResourcesRequest) bool {
	for _, claim := range request.Claims {
		if _, err := os.Stat(filepath.Join(r.cdiDir, claims.CDISpecName(claim.Uid))); err != nil {
			return false
		}
	}
	return true
}

// preparedAheadCalls is how many NodePrepareResources calls found their
// claims prepared ahead.
func (r *callTimes) preparedAheadCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.preparedAhead
}

// record adds one call of method that took elapsed.
func (r *callTimes) record(method string, elapsed time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byMethod[method] = append(r.byMethod[method], elapsed)
}

// of returns the times of the calls of method.
// readAheadOf tells whether claim (namespace/name) was read ahead.
func (r *callTimes) readAheadOf(claim string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, read := r.readEnds[claim]
	return read
}

func (r *callTimes) of(method string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byMethod[method])
}

// podToRunning creates a pause pod with one memif, returns how long it took
// to run, then deletes it and waits until it is gone and, for a claim, its
// memif released.
func podToRunning(ctx context.Context, b *testing.B, client kubernetes.Interface, a *agent, name string, claim bool) time.Duration {
	b.Helper()
	elapsed, err := podbench.CreateToRunning(ctx, client, podOf(name, cluster.PauseImage, nil, claim))
	if err != nil {
		b.Fatal(err)
	}
	var held []string
	for _, memif := range a.DeviceManager.ListAllocations() {
		if memif.Pod.Name == name {
			held = append(held, memif.HostDir)
		}
	}
	if err := client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	poll.Until(b, waitLimit, name+" gone and its memif released", func() error {
		if _, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			return errors.New("pod still there")
		}
		if claim {
			for _, dir := range held {
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("%s still there", dir)
				}
			}
		}
		return nil
	})
	return elapsed
}
