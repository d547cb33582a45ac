package claimprefetch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/contivpp/memif-agent/test/kit/poll"
)

const (
	node      = "node-1"
	namespace = "default"
	podUID    = types.UID("pod-uid-1")
	claimName = "pod-1-memif-x7k2q"
	waitLimit = 10 * time.Second
)

// apiServer is client-go's fake clientset holding one claim, counting the
// reads of claims it answers; while hold is open, reads wait on it.
type apiServer struct {
	*fakeapiserver.Clientset
	mu    sync.Mutex
	reads int
	hold  chan struct{}
	fail  error
}

func newAPIServer(t *testing.T, claim *resourceapi.ResourceClaim) *apiServer {
	t.Helper()
	s := &apiServer{Clientset: fakeapiserver.NewClientset(claim)}
	s.PrependReactor("get", "resourceclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		s.reads++
		hold, fail := s.hold, s.fail
		s.mu.Unlock()
		if hold != nil {
			<-hold
		}
		return fail != nil, nil, fail
	})
	return s
}

func (s *apiServer) claimReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// allocatedClaim is a claim allocated and reserved for the pod podUID.
func allocatedClaim(uid types.UID) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: namespace, UID: uid},
		Status: resourceapi.ResourceClaimStatus{
			Allocation:  &resourceapi.AllocationResult{},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "pod-1", UID: podUID}},
		},
	}
}

// templatePod is a pending pod bound to node whose claim comes from a
// template; the resourceclaim controller named it claimName.
func templatePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: namespace, UID: podUID},
		Spec: corev1.PodSpec{NodeName: node, ResourceClaims: []corev1.PodResourceClaim{
			{Name: "memif", ResourceClaimTemplateName: ptr.To("memif")}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ResourceClaimStatuses: []corev1.PodResourceClaimStatus{
			{Name: "memif", ResourceClaimName: ptr.To(claimName)}}},
	}
}

// clock is a settable time for Claims.now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is Claims over an API server holding the claim with UID
// "claim-uid-1", its reads waited for.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	api    *apiServer
	claims *Claims
	clock  *clock
}

func newFixture(t *testing.T, claim *resourceapi.ResourceClaim) *fixture {
	api := newAPIServer(t, claim)
	claims := New(api, node, time.Minute, nil)
	now := &clock{now: time.Unix(1000, 0)}
	claims.now = now.Now
	t.Cleanup(claims.reading.Wait)
	return &fixture{t: t, ctx: t.Context(), api: api, claims: claims, clock: now}
}

// podChanged passes pod to PodChanged and waits until the reads it
// started ended.
func (f *fixture) podChanged(pod *corev1.Pod) {
	f.claims.PodChanged(f.ctx, pod)
	f.claims.reading.Wait()
}

// get reads the claim through Client as kubeletplugin does.
func (f *fixture) get(options metav1.GetOptions) *resourceapi.ResourceClaim {
	f.t.Helper()
	claim, err := f.claims.Client().ResourceV1().ResourceClaims(namespace).Get(f.ctx, claimName, options)
	if err != nil {
		f.t.Fatalf("get claim %s: %v", claimName, err)
	}
	return claim
}

func TestGetHandsOutAClaimReadAheadOnceWhileItIsCurrent(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs after the pod's claim was read, before kubelet's Get.
		before func(f *fixture)
		pod    func() *corev1.Pod
		claim  *resourceapi.ResourceClaim
		// options are kubeletplugin's; a read with any goes to the API
		// server.
		options metav1.GetOptions
		// readAheadFails: the API server fails the read ahead.
		readAheadFails bool
		// apiReads counts the reads of the claim the API server answered,
		// ahead and for kubelet's Get: 1 when the Get got the copy read
		// ahead, or when nothing was read ahead.
		apiReads int
	}{
		{name: "claim from a template, read ahead", pod: templatePod, claim: allocatedClaim("claim-uid-1"), apiReads: 1},
		{name: "claim named in the pod's spec, read ahead", pod: func() *corev1.Pod {
			pod := templatePod()
			pod.Spec.ResourceClaims[0] = corev1.PodResourceClaim{Name: "memif", ResourceClaimName: ptr.To(claimName)}
			pod.Status.ResourceClaimStatuses = nil
			return pod
		}, claim: allocatedClaim("claim-uid-1"), apiReads: 1},
		{name: "template claim not named yet: nothing read", pod: func() *corev1.Pod {
			pod := templatePod()
			pod.Status.ResourceClaimStatuses = nil
			return pod
		}, claim: allocatedClaim("claim-uid-1"), apiReads: 1},
		{name: "pod of another node: nothing read", pod: func() *corev1.Pod {
			pod := templatePod()
			pod.Spec.NodeName = "node-2"
			return pod
		}, claim: allocatedClaim("claim-uid-1"), apiReads: 1},
		{name: "pod already running: nothing read", pod: func() *corev1.Pod {
			pod := templatePod()
			pod.Status.Phase = corev1.PodRunning
			return pod
		}, claim: allocatedClaim("claim-uid-1"), apiReads: 1},
		{name: "pod being deleted: nothing read", pod: func() *corev1.Pod {
			pod := templatePod()
			pod.DeletionTimestamp = &metav1.Time{Time: time.Unix(1000, 0)}
			return pod
		}, claim: allocatedClaim("claim-uid-1"), apiReads: 1},
		{name: "read not allocated: read again", pod: templatePod, claim: func() *resourceapi.ResourceClaim {
			claim := allocatedClaim("claim-uid-1")
			claim.Status.Allocation = nil
			return claim
		}(), apiReads: 2},
		{name: "read not reserved for the pod: read again", pod: templatePod, claim: func() *resourceapi.ResourceClaim {
			claim := allocatedClaim("claim-uid-1")
			claim.Status.ReservedFor[0].UID = "another-pod"
			return claim
		}(), apiReads: 2},
		{name: "pod gone since: read again", pod: templatePod, claim: allocatedClaim("claim-uid-1"),
			before: func(f *fixture) { f.claims.PodGone(podUID) }, apiReads: 2},
		{name: "pod running since: read again", pod: templatePod, claim: allocatedClaim("claim-uid-1"),
			before: func(f *fixture) {
				pod := templatePod()
				pod.Status.Phase = corev1.PodRunning
				f.podChanged(pod)
			}, apiReads: 2},
		{name: "pod changed since, same claims: read once", pod: templatePod, claim: allocatedClaim("claim-uid-1"),
			before: func(f *fixture) {
				pod := templatePod()
				pod.Labels = map[string]string{"changed": "yes"}
				f.podChanged(pod)
			}, apiReads: 1},
		{name: "read older than its time to live: read again", pod: templatePod, claim: allocatedClaim("claim-uid-1"),
			before: func(f *fixture) { f.clock.advance(time.Minute + time.Second) }, apiReads: 2},
		{name: "read with options: from the API server", pod: templatePod, claim: allocatedClaim("claim-uid-1"),
			options: metav1.GetOptions{ResourceVersion: "0"}, apiReads: 2},
		{name: "read ahead failed: read again", pod: templatePod, claim: allocatedClaim("claim-uid-1"),
			readAheadFails: true, apiReads: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.claim)
			if tc.readAheadFails {
				f.api.fail = errors.New("the API server is away")
			}
			f.podChanged(tc.pod())
			f.api.fail = nil
			if tc.before != nil {
				tc.before(f)
			}
			got := f.get(tc.options)
			if got.UID != tc.claim.UID {
				t.Fatalf("got claim %s, want %s", got.UID, tc.claim.UID)
			}
			if reads := f.api.claimReads(); reads != tc.apiReads {
				t.Errorf("the API server answered %d reads of the claim, want %d", reads, tc.apiReads)
			}
			f.get(tc.options)
			if reads, want := f.api.claimReads(), tc.apiReads+1; reads != want {
				t.Errorf("after a second Get the API server answered %d reads, want %d: a claim read ahead is handed out once", reads, want)
			}
		})
	}
}

func TestGetWaitsForAReadUnderWay(t *testing.T) {
	f := newFixture(t, allocatedClaim("claim-uid-1"))
	hold := make(chan struct{})
	f.api.mu.Lock()
	f.api.hold = hold
	f.api.mu.Unlock()
	f.claims.PodChanged(f.ctx, templatePod())
	got := make(chan *resourceapi.ResourceClaim)
	go func() { got <- f.get(metav1.GetOptions{}) }()
	poll.Until(t, waitLimit, "the read ahead under way", func() error {
		if f.api.claimReads() == 0 {
			return errors.New("not started")
		}
		return nil
	})
	close(hold)
	if claim := <-got; claim.UID != "claim-uid-1" {
		t.Errorf("got claim %s, want claim-uid-1", claim.UID)
	}
	if reads := f.api.claimReads(); reads != 1 {
		t.Errorf("the API server answered %d reads, want 1: the Get waits for the read under way", reads)
	}
}

// A claim deleted and made again under the same name after it was read
// ahead: kubeletplugin gets the old copy at most once (it fails the call
// on the UID kubelet sent), and kubelet's retry reads the new claim.
func TestClaimMadeAgainIsHandedOutStaleAtMostOnce(t *testing.T) {
	f := newFixture(t, allocatedClaim("claim-uid-1"))
	f.podChanged(templatePod())
	claims := f.api.ResourceV1().ResourceClaims(namespace)
	if err := claims.Delete(f.ctx, claimName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Create(f.ctx, allocatedClaim("claim-uid-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for attempt, want := range []types.UID{"claim-uid-1", "claim-uid-2", "claim-uid-2"} {
		if got := f.get(metav1.GetOptions{}).UID; got != want {
			t.Errorf("Get %d: claim %s, want %s", attempt+1, got, want)
		}
	}
}

func TestFollowReadsTheClaimsOfTheNodesPodsUntilStopped(t *testing.T) {
	f := newFixture(t, allocatedClaim("claim-uid-1"))
	ctx, stop := context.WithCancel(f.ctx)
	followed := make(chan error)
	go func() { followed <- f.claims.Follow(ctx) }()
	if _, err := f.api.CoreV1().Pods(namespace).Create(f.ctx, templatePod(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, waitLimit, "the claim of the bound pod read ahead", func() error {
		if f.api.claimReads() == 0 {
			return errors.New("not read")
		}
		return nil
	})
	if got := f.get(metav1.GetOptions{}).UID; got != "claim-uid-1" {
		t.Errorf("got claim %s, want claim-uid-1", got)
	}
	if reads := f.api.claimReads(); reads != 1 {
		t.Errorf("the API server answered %d reads, want 1 (the read ahead)", reads)
	}
	stop()
	if err := <-followed; err != nil {
		t.Errorf("Follow: %v", err)
	}
}

// observed records what Claims told its Observer.
type observed struct {
	mu    sync.Mutex
	read  []types.UID
	ended []types.UID
}

func (o *observed) ClaimRead(_ context.Context, pod types.UID, claim *resourceapi.ResourceClaim) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.read = append(o.read, pod+"/"+claim.UID)
}

func (o *observed) PodEnded(_ context.Context, pod *corev1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, pod.UID)
}

// TestObserverIsToldOfCurrentReadsAndEndedPods: the observer hears of a
// claim read that can be current, once, and not of one that cannot; and
// of a pod that Succeeded or Failed, not of one that runs or is being
// deleted (Follow tells it of a pod deleted from the API server).
func TestObserverIsToldOfCurrentReadsAndEndedPods(t *testing.T) {
	withPhase := func(phase corev1.PodPhase) *corev1.Pod {
		pod := templatePod()
		pod.Status.Phase = phase
		return pod
	}
	deleting := templatePod()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1000, 0)}
	notReserved := allocatedClaim("claim-uid-1")
	notReserved.Status.ReservedFor = nil
	for _, tc := range []struct {
		name      string
		claim     *resourceapi.ResourceClaim
		pods      []*corev1.Pod
		wantRead  int
		wantEnded int
	}{
		{name: "read, twice the same pod", claim: allocatedClaim("claim-uid-1"), pods: []*corev1.Pod{templatePod(), templatePod()}, wantRead: 1},
		{name: "read not reserved for the pod", claim: notReserved, pods: []*corev1.Pod{templatePod()}},
		{name: "running", claim: allocatedClaim("claim-uid-1"), pods: []*corev1.Pod{withPhase(corev1.PodRunning)}},
		{name: "being deleted", claim: allocatedClaim("claim-uid-1"), pods: []*corev1.Pod{deleting}},
		{name: "failed", claim: allocatedClaim("claim-uid-1"), pods: []*corev1.Pod{templatePod(), withPhase(corev1.PodFailed)}, wantRead: 1, wantEnded: 1},
		{name: "succeeded", claim: allocatedClaim("claim-uid-1"), pods: []*corev1.Pod{withPhase(corev1.PodSucceeded)}, wantEnded: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.claim)
			observer := &observed{}
			f.claims.observer = observer
			for _, pod := range tc.pods {
				f.podChanged(pod)
			}
			observer.mu.Lock()
			defer observer.mu.Unlock()
			if len(observer.read) != tc.wantRead || len(observer.ended) != tc.wantEnded {
				t.Errorf("observer told of reads %v and ended pods %v, want %d and %d", observer.read, observer.ended, tc.wantRead, tc.wantEnded)
			}
		})
	}
}
