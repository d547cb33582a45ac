package podtracker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
)

// DefaultReconcilePeriod is how often both sources are compared with what
// was announced.
const DefaultReconcilePeriod = 30 * time.Second

// Backoff of a push into a full controller queue.
const (
	pushMinBackoff = 5 * time.Millisecond
	pushMaxBackoff = 500 * time.Millisecond
)

var errTrackerClosed = errors.New("pod tracker is closed")

// Logger is what the tracker logs to.
type Logger interface {
	Debugf(format string, args ...any)
	Warnf(format string, args ...any)
}

// Config tunes a Tracker; zero values take the defaults.
type Config struct {
	ReconcilePeriod time.Duration
	// DockerMinBackoff and DockerMaxBackoff bound the wait before
	// reconnecting to Docker's event stream.
	DockerMinBackoff time.Duration
	DockerMaxBackoff time.Duration
}

// Deps are the tracker's peers.
type Deps struct {
	Docker *docker.Client
	// Kubelet is the pod-resources client; nil leaves the runtime alone
	// to tell which pods live.
	Kubelet   *podresources.Client
	EventLoop controllerapi.EventLoop
	Log       Logger
}

// Tracker follows the node's pods; see the package doc. Create it with New,
// run it with Start, stop it with Close.
type Tracker struct {
	cfg       Config
	deps      Deps
	inspector *dockerpods.Inspector
	inputs    chan func(context.Context)

	// Owned by the run goroutine.
	announced map[podapi.PodID]podapi.PodState
	// deletedUnannounced remembers pods deleted without ever being
	// announced, so the several destroy events of one pod push one
	// DeletePod; it is cleared by every full comparison.
	deletedUnannounced map[podapi.Pod]bool
	// rechecks are the pods that left Docker while kubelet still listed
	// them, or could not be asked.
	rechecks *recheckSchedule

	// ctx ends when the tracker is closed; cancel ends it.
	ctx     context.Context
	cancel  context.CancelFunc
	running sync.WaitGroup
}

var (
	_ podapi.PodLister   = (*Tracker)(nil)
	_ podapi.PodResolver = (*Tracker)(nil)
)

// New returns a Tracker; it does nothing until Start.
func New(cfg Config, deps Deps) (*Tracker, error) {
	if deps.Docker == nil || deps.EventLoop == nil || deps.Log == nil {
		return nil, errors.New("create pod tracker: Docker client, event loop and logger are required")
	}
	if cfg.ReconcilePeriod <= 0 {
		cfg.ReconcilePeriod = DefaultReconcilePeriod
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Tracker{
		ctx:                ctx,
		cancel:             cancel,
		cfg:                cfg,
		deps:               deps,
		inspector:          dockerpods.NewInspector(deps.Docker, deps.Log.Warnf),
		inputs:             make(chan func(context.Context)),
		announced:          map[podapi.PodID]podapi.PodState{},
		deletedUnannounced: map[podapi.Pod]bool{},
		rechecks:           newRecheckSchedule(cfg.ReconcilePeriod),
	}, nil
}

// Start starts watching Docker and reconciling. Call it once.
func (t *Tracker) Start() {
	ctx := t.ctx
	watcher := dockerpods.NewWatcher(t.deps.Docker, watcherListener{t}, t.deps.Log.Warnf,
		t.cfg.DockerMinBackoff, t.cfg.DockerMaxBackoff)
	t.running.Add(2)
	go func() {
		defer t.running.Done()
		watcher.Run(ctx)
	}()
	go func() {
		defer t.running.Done()
		t.run(ctx)
	}()
}

// Close stops both goroutines and waits for them. Events not yet pushed are
// dropped: the next start announces what is alive then.
func (t *Tracker) Close() {
	t.cancel()
	t.running.Wait()
}

// ListPods returns the live pods from Docker and kubelet together; an error
// when either cannot answer. It implements podapi.PodLister.
func (t *Tracker) ListPods(ctx context.Context) ([]podapi.PodState, error) {
	runtime, err := t.inspector.ListPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("list live pods: %w", err)
	}
	var kubelet []podapi.PodState
	if t.deps.Kubelet != nil {
		if kubelet, err = t.deps.Kubelet.ListPods(ctx); err != nil {
			return nil, fmt.Errorf("list live pods: %w", err)
		}
	}
	return MergeAll(runtime, kubelet), nil
}

// ResolvePod returns what Docker and kubelet know of one pod now; found is
// false when neither knows it. It implements podapi.PodResolver.
func (t *Tracker) ResolvePod(ctx context.Context, id podapi.PodID) (podapi.PodState, bool, error) {
	var runtime *podapi.PodState
	state, exists, err := t.inspector.GetPod(ctx, id)
	if err != nil {
		return podapi.PodState{}, false, fmt.Errorf("resolve pod %s: %w", id, err)
	}
	if exists {
		runtime = &state
	}
	kubelet, err := t.kubeletPod(ctx, id)
	if err != nil {
		return podapi.PodState{}, false, fmt.Errorf("resolve pod %s: %w", id, err)
	}
	live := Merge(runtime, kubelet)
	if live == nil {
		return podapi.PodState{}, false, nil
	}
	return *live, true, nil
}

// Reconcile compares both sources with what was announced, now, and waits
// until the resulting events are pushed. It fails once the tracker is
// closed, and waits for Start before that.
func (t *Tracker) Reconcile(ctx context.Context) error {
	done := make(chan struct{})
	if err := t.submit(ctx, func(ctx context.Context) {
		defer close(done)
		t.reconcile(ctx)
	}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Tracker) run(ctx context.Context) {
	ticker := time.NewTicker(t.cfg.ReconcilePeriod)
	defer ticker.Stop()
	recheckTimer := time.NewTimer(recheckMaxDelay)
	defer recheckTimer.Stop()
	for {
		t.armRecheck(recheckTimer)
		select {
		case <-ctx.Done():
			return
		case input := <-t.inputs:
			input(ctx)
		case <-ticker.C:
			t.reconcile(ctx)
		case <-recheckTimer.C:
			t.recheckDue(ctx)
		}
	}
}

// armRecheck sets timer to fire when rechecks are next due, and stops it
// when no pod waits.
func (t *Tracker) armRecheck(timer *time.Timer) {
	due, waiting := t.rechecks.next()
	if !waiting {
		timer.Stop()
		return
	}
	timer.Reset(time.Until(due))
}

// submit hands work to the run goroutine.
func (t *Tracker) submit(ctx context.Context, work func(context.Context)) error {
	select {
	case t.inputs <- work:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.ctx.Done():
		return errTrackerClosed
	}
}

// reconcile compares both complete listings with what was announced.
func (t *Tracker) reconcile(ctx context.Context) {
	runtime, err := t.inspector.ListPods(ctx)
	if err != nil {
		t.deps.Log.Warnf("pod reconciliation skipped: %v", err)
		return
	}
	t.compareAll(ctx, runtime)
}

// compareAll compares the runtime's complete listing, and kubelet's, with
// what was announced. Without kubelet's answer no pod is deleted.
func (t *Tracker) compareAll(ctx context.Context, runtime []podapi.PodState) {
	kubelet, kubeletKnown := []podapi.PodState(nil), true
	if t.deps.Kubelet != nil {
		var err error
		if kubelet, err = t.deps.Kubelet.ListPods(ctx); err != nil {
			t.deps.Log.Warnf("pods that left Docker are kept until kubelet answers: %v", err)
			kubeletKnown = false
		}
	}
	live := map[podapi.PodID]podapi.PodState{}
	for _, state := range MergeAll(runtime, kubelet) {
		live[state.Pod.ID] = state
	}
	for id, state := range live {
		t.apply(ctx, id, &state)
	}
	if !kubeletKnown {
		return
	}
	for id := range t.announced {
		if _, alive := live[id]; !alive {
			t.apply(ctx, id, nil)
		}
	}
	clear(t.deletedUnannounced)
	t.dropDecidedRechecks(runtime, live)
}

// dropDecidedRechecks forgets the rechecks that a full comparison made
// needless: of pods gone (deleted just now) and of pods back in Docker (its
// events follow them).
func (t *Tracker) dropDecidedRechecks(runtime []podapi.PodState, live map[podapi.PodID]podapi.PodState) {
	inRuntime := map[podapi.PodID]bool{}
	for _, state := range runtime {
		inRuntime[state.Pod.ID] = true
	}
	for _, id := range t.rechecks.ids() {
		if _, alive := live[id]; !alive || inRuntime[id] {
			t.rechecks.drop(id)
		}
	}
}

// podChanged re-decides one pod after a Docker event about it.
func (t *Tracker) podChanged(ctx context.Context, pod podapi.Pod, runtime *podapi.PodState) {
	kubelet, err := t.kubeletPod(ctx, pod.ID)
	if err != nil && runtime == nil {
		t.deps.Log.Warnf("pod %s left Docker; it is kept until kubelet answers: %v", pod, err)
	}
	if t.settle(ctx, pod, runtime, kubelet, err) {
		t.rechecks.add(pod, time.Now())
	} else {
		t.rechecks.drop(pod.ID)
	}
}

// settle decides one pod from what Docker (runtime) and kubelet list of it
// now; kubeletErr is why kubelet could not be asked. It returns true when
// the pod has left Docker but kubelet lists it, or could not be asked: the
// pod is kept and must be asked for again.
func (t *Tracker) settle(ctx context.Context, pod podapi.Pod, runtime, kubelet *podapi.PodState, kubeletErr error) bool {
	if kubeletErr != nil && runtime == nil {
		return true
	}
	live := Merge(runtime, kubelet)
	if live == nil {
		if _, announced := t.announced[pod.ID]; !announced {
			t.deleteUnannounced(ctx, pod)
			return false
		}
	}
	t.apply(ctx, pod.ID, live)
	return runtime == nil && live != nil
}

// recheckDue asks both sources again for the pods whose recheck is due:
// one listing from each, however many pods wait.
func (t *Tracker) recheckDue(ctx context.Context) {
	due := t.rechecks.takeDue(time.Now())
	if len(due) == 0 {
		return
	}
	// Failures are logged at debug level: rechecks come often, and the
	// Docker watcher and podChanged have warned already.
	runtime, err := t.inspector.ListPods(ctx)
	if err != nil {
		t.deps.Log.Debugf("recheck of %d pods that left Docker postponed: %v", len(due), err)
		t.backOffRechecks(due)
		return
	}
	var kubelet []podapi.PodState
	if t.deps.Kubelet != nil {
		if kubelet, err = t.deps.Kubelet.ListPods(ctx); err != nil {
			t.deps.Log.Debugf("recheck of %d pods that left Docker postponed: %v", len(due), err)
		}
	}
	runtimeByID, kubeletByID := byPodID(runtime), byPodID(kubelet)
	var pending []podapi.Pod
	for _, pod := range due {
		if t.settle(ctx, pod, runtimeByID[pod.ID], kubeletByID[pod.ID], err) {
			pending = append(pending, pod)
		} else {
			t.rechecks.drop(pod.ID)
		}
	}
	t.backOffRechecks(pending)
}

// backOffRechecks schedules the next recheck of pods still kept.
func (t *Tracker) backOffRechecks(pods []podapi.Pod) {
	now := time.Now()
	for _, pod := range pods {
		if !t.rechecks.backOff(pod.ID, now) {
			t.deps.Log.Debugf("pod %s left Docker but is still kept; only the periodic reconciliation follows it now", pod)
		}
	}
}

// byPodID indexes a listing by pod ID.
func byPodID(pods []podapi.PodState) map[podapi.PodID]*podapi.PodState {
	byID := make(map[podapi.PodID]*podapi.PodState, len(pods))
	for i := range pods {
		byID[pods[i].Pod.ID] = &pods[i]
	}
	return byID
}

// kubeletPod returns what kubelet knows of the pod: nil when it does not
// know it (or no kubelet is configured).
func (t *Tracker) kubeletPod(ctx context.Context, id podapi.PodID) (*podapi.PodState, error) {
	if t.deps.Kubelet == nil {
		return nil, nil
	}
	state, err := t.deps.Kubelet.GetPod(ctx, id)
	if errors.Is(err, podresources.ErrPodNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &state, nil
}

// deleteUnannounced pushes DeletePod for a pod whose last container went
// before it was ever announced (it was listed by nobody), so that whatever
// a handler bound to it at its own resync is released.
func (t *Tracker) deleteUnannounced(ctx context.Context, pod podapi.Pod) {
	if t.deletedUnannounced[pod] {
		return
	}
	t.deletedUnannounced[pod] = true
	t.push(ctx, &podapi.DeletePod{Pod: pod})
}

// apply decides one pod and pushes the events, in order.
func (t *Tracker) apply(ctx context.Context, id podapi.PodID, live *podapi.PodState) {
	var announced *podapi.PodState
	if state, found := t.announced[id]; found {
		announced = &state
	}
	next, events := Decide(announced, live)
	if next == nil {
		delete(t.announced, id)
	} else {
		t.announced[id] = *next
	}
	for _, event := range events {
		t.push(ctx, event)
	}
}

// push queues event, waiting while the controller's queue is full.
func (t *Tracker) push(ctx context.Context, event controllerapi.Event) {
	backoff := pushMinBackoff
	for {
		err := t.deps.EventLoop.PushEvent(event)
		if err == nil {
			t.deps.Log.Debugf("pushed %s", event)
			return
		}
		if !errors.Is(err, controllerapi.ErrEventQueueFull) {
			t.deps.Log.Warnf("%s not delivered: %v", event, err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, pushMaxBackoff)
	}
}

// watcherListener hands the Docker watcher's reports to the run goroutine.
type watcherListener struct{ t *Tracker }

func (l watcherListener) PodsListed(ctx context.Context, pods []podapi.PodState) {
	_ = l.t.submit(ctx, func(ctx context.Context) { l.t.compareAll(ctx, pods) })
}

func (l watcherListener) PodChanged(ctx context.Context, pod podapi.Pod, state podapi.PodState, exists bool) {
	var runtime *podapi.PodState
	if exists {
		runtime = &state
	}
	_ = l.t.submit(ctx, func(ctx context.Context) { l.t.podChanged(ctx, pod, runtime) })
}
