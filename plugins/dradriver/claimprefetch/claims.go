package claimprefetch

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// DefaultTimeToLive is how long a read claim is handed out: kubelet asks
// to prepare a pod's claims within a second of the pod's binding on a busy
// node; past this the read is dropped unused.
const DefaultTimeToLive = 30 * time.Second

// readTimeout bounds one read of a claim.
const readTimeout = 10 * time.Second

// Observer is told of what Claims sees: the DRA driver prepares each
// claim read with it, ahead of kubelet. Its methods run on Claims'
// goroutines, owned by Follow, and may block for as long as a prepare.
type Observer interface {
	// ClaimRead is called once a claim read for pod is in hand and may be
	// current: allocated, reserved for pod, pod still pending here.
	ClaimRead(ctx context.Context, pod types.UID, claim *resourceapi.ResourceClaim)
	// PodEnded is called with the last state seen of a pod of the node
	// that was deleted from the API server, or has Succeeded or Failed:
	// kubelet will not ask to prepare its claims. It may be called more
	// than once for a pod.
	PodEnded(ctx context.Context, pod *corev1.Pod)
}

// Claims holds the claims read ahead of kubelet for the pending pods of
// one node. Create it with New; Follow runs the watch of the node's pods.
type Claims struct {
	client   kubernetes.Interface
	node     string
	ttl      time.Duration
	now      func() time.Time
	observer Observer

	mu sync.Mutex
	// reads are the claims read, or being read, by namespace and name.
	reads map[types.NamespacedName]*read
	// pending are the pending pods whose claims were read, with those
	// claims, until the pods run, end or go.
	pending map[types.UID][]types.NamespacedName
	// reading counts the reads under way, for Follow to wait on.
	reading sync.WaitGroup
}

// read is one claim read for one pod.
type read struct {
	pod types.UID
	// done is closed when the read ended; claim is nil if it failed.
	done   chan struct{}
	claim  *resourceapi.ResourceClaim
	readAt time.Time
}

// New returns Claims reading with client the claims of the pods bound to
// node, each handed out for at most ttl after it was read, and telling
// observer (nil: nobody) of each claim read and each pod ended.
func New(client kubernetes.Interface, node string, ttl time.Duration, observer Observer) *Claims {
	return &Claims{
		client: client, node: node, ttl: ttl, now: time.Now, observer: observer,
		reads: map[types.NamespacedName]*read{}, pending: map[types.UID][]types.NamespacedName{},
	}
}

// PodChanged reads the claims of pod when it is pending on the node and
// names claims not yet read for it, and forgets them once the pod runs,
// ends or is being deleted. The reads run on goroutines of their own,
// bound by ctx.
func (c *Claims) PodChanged(ctx context.Context, pod *corev1.Pod) {
	if pod.Spec.NodeName != c.node || pod.DeletionTimestamp != nil || (pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "") {
		c.PodGone(pod.UID)
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			c.podEnded(ctx, pod)
		}
		return
	}
	names := claimNames(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropExpired()
	if len(names) == 0 || slices.Equal(c.pending[pod.UID], names) {
		return
	}
	c.pending[pod.UID] = names
	for _, name := range names {
		r := &read{pod: pod.UID, done: make(chan struct{})}
		c.reads[name] = r
		c.reading.Add(1)
		go c.readClaim(ctx, name, r)
	}
}

// PodGone forgets the claims read for the pod with uid.
func (c *Claims) PodGone(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range c.pending[uid] {
		if r := c.reads[name]; r != nil && r.pod == uid {
			delete(c.reads, name)
		}
	}
	delete(c.pending, uid)
}

func (c *Claims) readClaim(ctx context.Context, name types.NamespacedName, r *read) {
	defer c.reading.Done()
	readCtx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	claim, err := c.client.ResourceV1().ResourceClaims(name.Namespace).Get(readCtx, name.Name, metav1.GetOptions{})
	c.mu.Lock()
	if err == nil {
		r.claim, r.readAt = claim, c.now()
	}
	current := c.current(r)
	c.mu.Unlock()
	close(r.done)
	if current && c.observer != nil {
		c.observer.ClaimRead(ctx, r.pod, claim)
	}
}

// podEnded tells the observer that pod ended.
func (c *Claims) podEnded(ctx context.Context, pod *corev1.Pod) {
	if c.observer != nil {
		c.observer.PodEnded(ctx, pod)
	}
}

// take hands out the claim read for name once, waiting for a read under
// way; nil when there is none, or it failed, or it may no longer be
// current (see the package doc), or ctx ended first.
func (c *Claims) take(ctx context.Context, name types.NamespacedName) *resourceapi.ResourceClaim {
	c.mu.Lock()
	r := c.reads[name]
	c.mu.Unlock()
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads[name] != r {
		return nil
	}
	delete(c.reads, name)
	if !c.current(r) {
		return nil
	}
	return r.claim
}

// current says whether r may still be what the API server holds: read,
// allocated and reserved for its pod, which is still pending here, and
// not older than the time to live. Called with mu held.
func (c *Claims) current(r *read) bool {
	if r.claim == nil || r.claim.Status.Allocation == nil || c.now().Sub(r.readAt) > c.ttl {
		return false
	}
	if _, pending := c.pending[r.pod]; !pending {
		return false
	}
	return slices.ContainsFunc(r.claim.Status.ReservedFor, func(ref resourceapi.ResourceClaimConsumerReference) bool {
		return ref.Resource == "pods" && ref.UID == r.pod
	})
}

// dropExpired forgets the reads older than the time to live. The pods
// stay: their claims are not read again. Called with mu held.
func (c *Claims) dropExpired() {
	for name, r := range c.reads {
		select {
		case <-r.done:
			if c.now().Sub(r.readAt) > c.ttl {
				delete(c.reads, name)
			}
		default:
		}
	}
}

// claimNames are the claims pod uses: those its spec names, and those the
// resourceclaim controller made for it from templates, once its status
// names them. Nil until every claim of the pod is named.
func claimNames(pod *corev1.Pod) []types.NamespacedName {
	var names []types.NamespacedName
	for _, podClaim := range pod.Spec.ResourceClaims {
		name := podClaim.ResourceClaimName
		if name == nil {
			i := slices.IndexFunc(pod.Status.ResourceClaimStatuses, func(s corev1.PodResourceClaimStatus) bool { return s.Name == podClaim.Name })
			if i < 0 {
				return nil
			}
			name = pod.Status.ResourceClaimStatuses[i].ResourceClaimName
		}
		if name != nil {
			names = append(names, types.NamespacedName{Namespace: pod.Namespace, Name: *name})
		}
	}
	return names
}
