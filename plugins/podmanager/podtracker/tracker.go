package podtracker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/contivpp/memif-agent/internal/backoff"
	"github.com/contivpp/memif-agent/internal/logs"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/plugins/podmanager/podresources"
)

// DefaultReconcilePeriod is how often both sources are compared with what
// was announced, and LivePods pushed.
const DefaultReconcilePeriod = 30 * time.Second

// DefaultGoneGrace is how long kubelet must miss a pod, while the runtime
// cannot be listed, before the pod is deleted.
const DefaultGoneGrace = 2 * time.Second

// Backoff of a push into a full controller queue.
const (
	pushMinBackoff = 5 * time.Millisecond
	pushMaxBackoff = 500 * time.Millisecond
)

var (
	errTrackerClosed = errors.New("pod tracker is closed")
	errNotAskedYet   = errors.New("the pod sources have not been asked yet")
)

// Config tunes a Tracker; zero values take the defaults.
type Config struct {
	ReconcilePeriod time.Duration
	// GoneGrace is how long kubelet must miss a pod before it is deleted
	// while the runtime cannot be listed (or there is none); the pods are
	// compared that often meanwhile.
	GoneGrace time.Duration
}

// Deps are the tracker's peers; at least one of Runtime and Kubelet.
type Deps struct {
	// Runtime is the container runtime (Docker or a CRI runtime); nil
	// leaves kubelet's pod-resources alone to tell which pods live.
	Runtime podapi.Runtime
	// Kubelet is the pod-resources client; nil leaves the runtime alone
	// to tell which pods live.
	Kubelet   *podresources.Client
	EventLoop controllerapi.EventLoop
	Log       logs.Logger
}

// errNoRuntime is the runtime's answer when none is configured.
var errNoRuntime = errors.New("no container runtime configured")

// Tracker follows the node's pods; see the package doc. Create it with New,
// run it with Start, stop it with Close.
type Tracker struct {
	cfg    Config
	deps   Deps
	inputs chan func(context.Context)

	// Owned by the run goroutine.
	announced map[podapi.PodID]podapi.PodState
	// deletedUnannounced remembers pods deleted without ever being
	// announced, so the several destroy events of one pod push one
	// DeletePod; it is cleared by every full comparison.
	deletedUnannounced map[podapi.Pod]bool
	// rechecks are the pods that left Docker while kubelet still listed
	// them, or could not be asked.
	rechecks *recheckSchedule
	// runtimeDown: the last listing of the runtime failed; the pods are
	// compared every GoneGrace until it answers.
	runtimeDown bool
	// missing are the announced pods kubelet stopped listing while the
	// runtime was down, and since when.
	missing map[podapi.PodID]time.Time
	// kubeletAloneSince is when kubelet first answered while the runtime
	// was down; zero while the runtime answers. LivePods waits until
	// kubelet alone has been listing for the gone-grace, so that a pod its
	// gap after a restart hides, and which was never announced, is not
	// taken for gone.
	kubeletAloneSince time.Time

	// requests are RequestLivePods calls the run goroutine has not served.
	requests chan struct{}
	// sourcesAnswer is PodSourcesAnswer's answer, behind answerMu.
	answerMu      sync.Mutex
	sourcesAnswer error

	// ctx ends when the tracker is closed; cancel ends it.
	ctx     context.Context
	cancel  context.CancelFunc
	running sync.WaitGroup
}

var (
	_ podapi.LivePodsSource = (*Tracker)(nil)
	_ podapi.PodResolver    = (*Tracker)(nil)
)

// New returns a Tracker; it does nothing until Start.
func New(cfg Config, deps Deps) (*Tracker, error) {
	if deps.Runtime == nil && deps.Kubelet == nil || deps.EventLoop == nil || deps.Log == nil {
		return nil, errors.New("create pod tracker: a runtime or kubelet, an event loop and a logger are required")
	}
	if cfg.ReconcilePeriod <= 0 {
		cfg.ReconcilePeriod = DefaultReconcilePeriod
	}
	if cfg.GoneGrace <= 0 {
		cfg.GoneGrace = DefaultGoneGrace
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Tracker{
		ctx:                ctx,
		cancel:             cancel,
		cfg:                cfg,
		deps:               deps,
		inputs:             make(chan func(context.Context)),
		announced:          map[podapi.PodID]podapi.PodState{},
		deletedUnannounced: map[podapi.Pod]bool{},
		missing:            map[podapi.PodID]time.Time{},
		rechecks:           newRecheckSchedule(cfg.ReconcilePeriod),
		runtimeDown:        deps.Runtime == nil,
		requests:           make(chan struct{}, 1),
		sourcesAnswer:      errNotAskedYet,
	}, nil
}

// Start starts watching the runtime and reconciling. Call it once.
func (t *Tracker) Start() {
	ctx := t.ctx
	if t.deps.Runtime != nil {
		t.running.Add(1)
		go func() {
			defer t.running.Done()
			t.deps.Runtime.Watch(ctx, watcherListener{t})
		}()
	}
	t.running.Add(1)
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

// RequestLivePods asks for a comparison of the sources, and so a LivePods
// event, soon; it does not wait. It implements podapi.LivePodsSource.
func (t *Tracker) RequestLivePods() {
	select {
	case t.requests <- struct{}{}:
	default: // one asked for already
	}
}

// PodSourcesAnswer implements podapi.LivePodsSource.
func (t *Tracker) PodSourcesAnswer() error {
	t.answerMu.Lock()
	defer t.answerMu.Unlock()
	return t.sourcesAnswer
}

func (t *Tracker) setSourcesAnswer(err error) {
	t.answerMu.Lock()
	defer t.answerMu.Unlock()
	t.sourcesAnswer = err
}

// runtimePods lists the runtime's pods; errNoRuntime without one.
func (t *Tracker) runtimePods(ctx context.Context) ([]podapi.PodState, error) {
	if t.deps.Runtime == nil {
		return nil, errNoRuntime
	}
	return t.deps.Runtime.ListPods(ctx)
}

// kubeletPods lists kubelet's pods; nil without a kubelet.
func (t *Tracker) kubeletPods(ctx context.Context) ([]podapi.PodState, error) {
	if t.deps.Kubelet == nil {
		return nil, nil
	}
	return t.deps.Kubelet.ListPods(ctx)
}

// ResolvePod returns what Docker and kubelet know of one pod now; found is
// false when neither knows it. A source failing alone leaves the answer to
// the other. It implements podapi.PodResolver.
func (t *Tracker) ResolvePod(ctx context.Context, id podapi.PodID) (podapi.PodState, bool, error) {
	var runtime *podapi.PodState
	state, exists, runtimeErr := podapi.PodState{}, false, errNoRuntime
	if t.deps.Runtime != nil {
		state, exists, runtimeErr = t.deps.Runtime.GetPod(ctx, id)
	}
	if runtimeErr == nil && exists {
		runtime = &state
	}
	kubelet, kubeletErr := t.kubeletPod(ctx, id)
	if runtimeErr != nil && (kubeletErr != nil || t.deps.Kubelet == nil) {
		return podapi.PodState{}, false, fmt.Errorf("resolve pod %s: %w", id, errors.Join(runtimeErr, kubeletErr))
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
	degradedTicker := time.NewTicker(t.cfg.GoneGrace)
	defer degradedTicker.Stop()
	for {
		t.armRecheck(recheckTimer)
		select {
		case <-ctx.Done():
			return
		case input := <-t.inputs:
			input(ctx)
		case <-ticker.C:
			t.reconcile(ctx)
		case <-t.requests:
			t.reconcile(ctx)
		case <-degradedTicker.C:
			if t.runtimeDown {
				t.reconcile(ctx)
			}
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

// reconcile compares the listings of the sources that answer with what
// was announced.
func (t *Tracker) reconcile(ctx context.Context) {
	runtime, err := t.runtimePods(ctx)
	if err != nil {
		first := !t.runtimeDown
		if first {
			t.deps.Log.WarnS("comparing pods with kubelet's listing alone until the runtime answers", "err", err)
		}
		t.runtimeDown = true
		t.compareKubeletOnly(ctx, err, first)
		return
	}
	t.compareAll(ctx, runtime)
}

// compareAll compares the runtime's complete listing, and kubelet's, with
// what was announced, and pushes LivePods when goneAfter lets it decide.
// Without kubelet's answer no pod is deleted.
func (t *Tracker) compareAll(ctx context.Context, runtime []podapi.PodState) {
	t.runtimeDown = false
	t.kubeletAloneSince = time.Time{}
	clear(t.missing)
	t.setSourcesAnswer(nil)
	kubelet, err := t.kubeletPods(ctx)
	if err != nil {
		t.deps.Log.WarnS("pods that left Docker are kept until kubelet answers", "err", err)
	}
	live := map[podapi.PodID]podapi.PodState{}
	for _, state := range MergeAll(runtime, kubelet) {
		live[state.Pod.ID] = state
	}
	for id, state := range live {
		t.apply(ctx, id, &state)
	}
	sources := answered{runtime: true, kubelet: t.deps.Kubelet != nil && err == nil, kubeletConfigured: t.deps.Kubelet != nil}
	if _, decides := goneAfter(sources, t.cfg.GoneGrace); !decides {
		return
	}
	for id := range t.announced {
		if _, alive := live[id]; !alive {
			t.apply(ctx, id, nil)
		}
	}
	clear(t.deletedUnannounced)
	t.dropDecidedRechecks(runtime, live)
	t.pushLivePods(ctx, sources.kubelet)
}

// compareKubeletOnly compares kubelet's listing alone with what was
// announced, while the runtime cannot be listed (runtimeErr). kubelet is
// the authority on devices: a pod it stops listing holds none. But it lists
// none for a moment after it restarts, so an announced pod is deleted only
// once kubelet has missed it for goneGrace.
// first is whether the runtime has just failed: later failures, every
// gone-grace, are logged at debug level.
func (t *Tracker) compareKubeletOnly(ctx context.Context, runtimeErr error, first bool) {
	logAt := t.deps.Log.DebugS
	if first {
		logAt = t.deps.Log.WarnS
	}
	if t.deps.Kubelet == nil {
		logAt("pod reconciliation skipped: the runtime does not answer", "runtimeErr", runtimeErr)
		t.setSourcesAnswer(fmt.Errorf("no pod source answers: runtime: %w", runtimeErr))
		return
	}
	kubelet, err := t.deps.Kubelet.ListPods(ctx)
	if err != nil {
		logAt("pod reconciliation skipped: neither source answers", "runtimeErr", runtimeErr, "kubeletErr", err)
		t.setSourcesAnswer(fmt.Errorf("no pod source answers: runtime: %w; kubelet: %w", runtimeErr, err))
		return
	}
	t.setSourcesAnswer(nil)
	live := byPodID(kubelet)
	for _, state := range kubelet {
		delete(t.missing, state.Pod.ID)
		t.apply(ctx, state.Pod.ID, &state)
	}
	now := time.Now()
	if t.kubeletAloneSince.IsZero() {
		t.kubeletAloneSince = now
	}
	grace, _ := goneAfter(answered{kubelet: true, kubeletConfigured: true}, t.cfg.GoneGrace)
	for id := range t.announced {
		if live[id] != nil {
			continue
		}
		since, missed := t.missing[id]
		if !missed {
			since = now
			t.missing[id] = now
		}
		if now.Sub(since) >= grace {
			delete(t.missing, id)
			t.apply(ctx, id, nil)
		}
	}
	if now.Sub(t.kubeletAloneSince) >= grace {
		t.pushLivePods(ctx, true)
	}
}

// pushLivePods pushes the pods announced, the ones this comparison found
// alive, as the LivePods decision; kubeletDevices tells that kubelet's
// listing was part of it.
func (t *Tracker) pushLivePods(ctx context.Context, kubeletDevices bool) {
	pods := make([]podapi.PodState, 0, len(t.announced))
	for _, state := range t.announced {
		state.Containers = slices.Clone(state.Containers)
		pods = append(pods, state)
	}
	slices.SortFunc(pods, func(a, b podapi.PodState) int { return strings.Compare(a.Pod.ID.String(), b.Pod.ID.String()) })
	t.push(ctx, &podapi.LivePods{Pods: pods, KubeletDevices: kubeletDevices})
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
		t.deps.Log.WarnS("pod left Docker: it is kept until kubelet answers", "pod", pod, "err", err)
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
	runtime, err := t.runtimePods(ctx)
	if err != nil {
		t.deps.Log.DebugS("recheck of pods that left Docker postponed", "pods", len(due), "err", err)
		t.backOffRechecks(due)
		return
	}
	var kubelet []podapi.PodState
	if t.deps.Kubelet != nil {
		if kubelet, err = t.deps.Kubelet.ListPods(ctx); err != nil {
			t.deps.Log.DebugS("recheck of pods that left Docker postponed", "pods", len(due), "err", err)
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
			t.deps.Log.DebugS("pod left Docker but is still kept: only the periodic reconciliation follows it now", "pod", pod)
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
	delay := backoff.New(pushMinBackoff, pushMaxBackoff)
	for {
		err := t.deps.EventLoop.PushEvent(event)
		if err == nil {
			t.deps.Log.DebugS("event pushed", "event", event.String())
			return
		}
		if !errors.Is(err, controllerapi.ErrEventQueueFull) {
			t.deps.Log.WarnS("event not delivered", "event", event.String(), "err", err)
			return
		}
		if !delay.Wait(ctx) {
			return
		}
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
