package cripods

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/contivpp/memif-agent/internal/backoff"
	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/internal/unixgrpc"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

const (
	// DefaultCallTimeout bounds one call to the runtime.
	DefaultCallTimeout = 5 * time.Second
	// DefaultRelistPeriod is how often a runtime that streams no events is
	// listed again.
	DefaultRelistPeriod = time.Second
	// maxReconnectDelay caps the wait, doubling from the relist period,
	// before the event stream is followed again after it broke.
	maxReconnectDelay = 5 * time.Second
)

// kubelet's labels on sandboxes and containers.
const (
	LabelPodName      = "io.kubernetes.pod.name"
	LabelPodNamespace = "io.kubernetes.pod.namespace"
	LabelPodUID       = "io.kubernetes.pod.uid"
)

// DefaultEndpoints are the CRI sockets of containerd and CRI-O, in the
// order a node is looked at: on the node, then where the agent's DaemonSet
// mounts the node's /run (the chart's templates/daemonset.yaml).
var DefaultEndpoints = []string{
	"/run/containerd/containerd.sock", "/run/crio/crio.sock",
	"/host/run/containerd/containerd.sock", "/host/run/crio/crio.sock",
}

// Source is a CRI runtime as the pod manager's podapi.Runtime. It is safe
// for concurrent use. Create it with New, close it with Close.
type Source struct {
	endpoint     string
	callTimeout  time.Duration
	relistPeriod time.Duration
	log          logs.Logger
	conn         *grpc.ClientConn
	runtime      runtimev1.RuntimeServiceClient

	mu sync.Mutex
	// mounts are the mount sources of each container asked so far.
	mounts map[string][]string
}

var _ podapi.Runtime = (*Source)(nil)

// New returns a source for the runtime socket at endpoint (a path, or
// unix:///path). Nothing is dialled until the first call, so the runtime
// may start later. Zero durations take the defaults. log hears of what is
// skipped and of the runtime's failures; nil: nothing is logged.
func New(endpoint string, callTimeout, relistPeriod time.Duration, log logs.Logger) (*Source, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("CRI endpoint %q: want an absolute socket path or unix:///path", endpoint)
	}
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	if relistPeriod <= 0 {
		relistPeriod = DefaultRelistPeriod
	}
	if log == nil {
		log = logs.Discard()
	}
	conn, err := unixgrpc.NewClient("CRI", path)
	if err != nil {
		return nil, err
	}
	return &Source{
		endpoint: path, callTimeout: callTimeout, relistPeriod: relistPeriod, log: log,
		conn: conn, runtime: runtimev1.NewRuntimeServiceClient(conn), mounts: map[string][]string{},
	}, nil
}

// Close closes the connection.
func (s *Source) Close() error { return s.conn.Close() }

// String implements podapi.Runtime.
func (s *Source) String() string { return "CRI runtime at " + s.endpoint }

// Version asks the runtime its name and version: whether it answers.
func (s *Source) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	version, err := s.runtime.Version(ctx, &runtimev1.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("ask the CRI runtime at %s its version: %w", s.endpoint, err)
	}
	return version.GetRuntimeName() + " " + version.GetRuntimeVersion(), nil
}

// ListPods implements podapi.Runtime.
func (s *Source) ListPods(ctx context.Context) ([]podapi.PodState, error) {
	pods, _, err := s.list(ctx, nil, true)
	return pods, err
}

// GetPod implements podapi.Runtime.
func (s *Source) GetPod(ctx context.Context, id podapi.PodID) (podapi.PodState, bool, error) {
	state, found, _, err := s.getPod(ctx, id)
	return state, found, err
}

// getPod is GetPod that also tells whether none of the pod's containers
// runs (all exited, or none yet).
func (s *Source) getPod(ctx context.Context, id podapi.PodID) (state podapi.PodState, found, idle bool, err error) {
	pods, idleUIDs, err := s.list(ctx, map[string]string{LabelPodNamespace: id.Namespace, LabelPodName: id.Name}, false)
	if err != nil || len(pods) == 0 {
		return podapi.PodState{}, false, false, err
	}
	return pods[0], true, idleUIDs[pods[0].Pod.UID], nil
}

// list lists the sandboxes and containers carrying every label of
// selector and groups them into pods. complete says the listing is of
// every pod, so the mounts of containers not in it are forgotten.
//
// A pod is listed while the runtime runs something of it: a ready sandbox
// or a container not exited. What kubelet leaves of a deleted or completed
// pod, a stopped sandbox and exited containers, stays in the runtime until
// kubelet's garbage collection, up to a minute later; nothing of it uses
// its memif any more and whether the pod still lives is kubelet's to say,
// so it is not listed. idle holds the UIDs of the listed pods none of
// whose containers runs.
func (s *Source) list(ctx context.Context, selector map[string]string, complete bool) (pods []podapi.PodState, idle map[string]bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	sandboxes, err := s.runtime.ListPodSandbox(ctx, &runtimev1.ListPodSandboxRequest{Filter: &runtimev1.PodSandboxFilter{LabelSelector: selector}})
	if err != nil {
		return nil, nil, fmt.Errorf("list pod sandboxes of the CRI runtime at %s: %w", s.endpoint, err)
	}
	containers, err := s.runtime.ListContainers(ctx, &runtimev1.ListContainersRequest{Filter: &runtimev1.ContainerFilter{LabelSelector: selector}})
	if err != nil {
		return nil, nil, fmt.Errorf("list containers of the CRI runtime at %s: %w", s.endpoint, err)
	}
	byUID := map[string]*podapi.PodState{}
	newest := map[string]int64{}
	sandboxPods := map[string]podapi.Pod{}
	// ready and running are the UIDs of the pods with a ready sandbox,
	// and with a container not exited.
	ready, running := map[string]bool{}, map[string]bool{}
	for _, sandbox := range sandboxes.GetItems() {
		pod, err := sandboxPod(sandbox.GetMetadata())
		pod.Networks = sandbox.GetAnnotations()[memifspec.AnnotationKey]
		if err != nil {
			s.log.WarnS("skipping a pod sandbox of the CRI runtime", "sandbox", sandbox.GetId(), "err", err)
			continue
		}
		sandboxPods[sandbox.GetId()] = pod
		addPod(byUID, newest, pod, sandbox.GetCreatedAt())
		if sandbox.GetState() == runtimev1.PodSandboxState_SANDBOX_READY {
			ready[pod.UID] = true
		}
	}
	seen := map[string]bool{}
	for _, container := range containers.GetContainers() {
		pod, found := sandboxPods[container.GetPodSandboxId()]
		if !found {
			if pod, err = labelledPod(container.GetLabels()); err != nil {
				s.log.WarnS("skipping a container of the CRI runtime", "container", container.GetId(), "err", err)
				continue
			}
		}
		seen[container.GetId()] = true
		sources, err := s.mountSources(ctx, container.GetId())
		if err != nil {
			return nil, nil, err
		}
		if container.GetState() != runtimev1.ContainerState_CONTAINER_EXITED {
			running[pod.UID] = true
		}
		state := addPod(byUID, newest, pod, container.GetCreatedAt())
		state.Containers = append(state.Containers, podapi.PodContainer{
			Name:         container.GetMetadata().GetName(),
			RuntimeID:    container.GetId(),
			MountSources: sources,
			Annotations:  maps.Clone(container.GetAnnotations()),
		})
	}
	if complete {
		s.forgetMounts(seen)
	}
	idle = map[string]bool{}
	for uid := range byUID {
		switch {
		case running[uid]:
		case ready[uid]:
			idle[uid] = true
		default:
			delete(byUID, uid)
		}
	}
	return podapi.LatestIncarnations(byUID, newest), idle, nil
}

// addPod returns the pod of byUID, adding it first, and records created as
// its newest object when it is.
func addPod(byUID map[string]*podapi.PodState, newest map[string]int64, pod podapi.Pod, created int64) *podapi.PodState {
	state, found := byUID[pod.UID]
	if !found {
		state = &podapi.PodState{Pod: pod}
		byUID[pod.UID] = state
	}
	newest[pod.UID] = max(newest[pod.UID], created)
	return state
}

func sandboxPod(metadata *runtimev1.PodSandboxMetadata) (podapi.Pod, error) {
	id, err := podapi.ParsePodID(metadata.GetNamespace() + "/" + metadata.GetName())
	if err != nil {
		return podapi.Pod{}, err
	}
	if metadata.GetUid() == "" {
		return podapi.Pod{}, fmt.Errorf("pod %s has no UID in its sandbox metadata", id)
	}
	return podapi.Pod{ID: id, UID: metadata.GetUid()}, nil
}

// labelledPod reads a container's pod from kubelet's labels, for a
// container whose sandbox is not listed (removed first).
func labelledPod(labels map[string]string) (podapi.Pod, error) {
	id, err := podapi.ParsePodID(labels[LabelPodNamespace] + "/" + labels[LabelPodName])
	if err != nil {
		return podapi.Pod{}, fmt.Errorf("not a kubelet container: %w", err)
	}
	if labels[LabelPodUID] == "" {
		return podapi.Pod{}, fmt.Errorf("not a kubelet container: label %s missing", LabelPodUID)
	}
	return podapi.Pod{ID: id, UID: labels[LabelPodUID]}, nil
}

// mountSources returns a container's mount sources, sorted, asking the
// runtime the first time. A container removed meanwhile has none.
func (s *Source) mountSources(ctx context.Context, containerID string) ([]string, error) {
	s.mu.Lock()
	sources, known := s.mounts[containerID]
	s.mu.Unlock()
	if known {
		return slices.Clone(sources), nil
	}
	response, err := s.runtime.ContainerStatus(ctx, &runtimev1.ContainerStatusRequest{ContainerId: containerID})
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ask the CRI runtime at %s for the mounts of container %s: %w", s.endpoint, containerID, err)
	}
	for _, mount := range response.GetStatus().GetMounts() {
		if mount.GetHostPath() != "" {
			sources = append(sources, mount.GetHostPath())
		}
	}
	slices.Sort(sources)
	s.mu.Lock()
	s.mounts[containerID] = sources
	s.mu.Unlock()
	return slices.Clone(sources), nil
}

// forgetMounts drops the mounts of containers not in seen.
func (s *Source) forgetMounts(seen map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.DeleteFunc(s.mounts, func(id string, _ []string) bool { return !seen[id] })
}

// Watch implements podapi.Runtime: it follows the runtime's container
// events, or relists every relist period when the runtime streams none,
// until ctx ends.
func (s *Source) Watch(ctx context.Context, listener podapi.RuntimeListener) {
	delay := backoff.New(s.relistPeriod, maxReconnectDelay)
	for ctx.Err() == nil {
		err := s.follow(ctx, listener)
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			s.relist(ctx, listener)
			return
		}
		wait := delay.Next()
		s.log.WarnS("CRI event stream broke: listing again", "endpoint", s.endpoint, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// follow subscribes to the container events, lists every pod, then tells
// the listener of each pod an event is about, until the stream breaks.
func (s *Source) follow(ctx context.Context, listener podapi.RuntimeListener) error {
	var receiving sync.WaitGroup
	defer receiving.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A runtime without the call (containerd 1.6) answers Unimplemented at
	// the first receive, not here.
	stream, err := s.runtime.GetContainerEvents(ctx, &runtimev1.GetEventsRequest{})
	if err != nil {
		return err
	}
	events := make(chan *runtimev1.ContainerEventResponse)
	errs := make(chan error, 1)
	receiving.Add(1)
	go func() {
		defer receiving.Done()
		defer close(events)
		for {
			event, err := stream.Recv()
			if err != nil {
				errs <- err
				return
			}
			select {
			case events <- event:
			case <-ctx.Done():
				return
			}
		}
	}()
	pods, err := s.ListPods(ctx)
	if err != nil {
		return err
	}
	listener.PodsListed(ctx, pods)
	// emptied are the pods an event left with a ready sandbox and no
	// running container (kubelet stops a deleted pod's containers, then
	// its sandbox): a runtime may send no event when the sandbox stops or
	// goes (containerd 2.x), so they are read again every relist period
	// until they are gone or run a container.
	emptied := map[podapi.PodID]podapi.Pod{}
	ticker := time.NewTicker(s.relistPeriod)
	defer ticker.Stop()
	for {
		select {
		case event, open := <-events:
			if !open {
				select {
				case err := <-errs:
					return err
				default:
					return ctx.Err()
				}
			}
			if err := s.handle(ctx, event, listener, emptied); err != nil {
				return err
			}
		case err := <-errs:
			return err
		case <-ticker.C:
			for _, pod := range emptied {
				if err := s.reread(ctx, pod, listener, emptied); err != nil {
					return err
				}
			}
		}
	}
}

// handle re-reads the pod an event is about; an event that names no pod
// (a runtime that leaves the sandbox status out) lists every pod.
func (s *Source) handle(ctx context.Context, event *runtimev1.ContainerEventResponse, listener podapi.RuntimeListener, emptied map[podapi.PodID]podapi.Pod) error {
	pod, err := sandboxPod(event.GetPodSandboxStatus().GetMetadata())
	if err != nil {
		pods, err := s.ListPods(ctx)
		if err != nil {
			return err
		}
		listener.PodsListed(ctx, pods)
		return nil
	}
	return s.reread(ctx, pod, listener, emptied)
}

// reread tells the listener the pod's state now and keeps emptied up to
// date.
func (s *Source) reread(ctx context.Context, pod podapi.Pod, listener podapi.RuntimeListener, emptied map[podapi.PodID]podapi.Pod) error {
	state, exists, idle, err := s.getPod(ctx, pod.ID)
	if err != nil {
		return fmt.Errorf("read pod %s after an event: %w", pod, err)
	}
	listener.PodChanged(ctx, pod, state, exists)
	if exists && idle {
		emptied[pod.ID] = pod
	} else {
		delete(emptied, pod.ID)
	}
	return nil
}

// relist lists every pod every relist period until ctx ends.
func (s *Source) relist(ctx context.Context, listener podapi.RuntimeListener) {
	ticker := time.NewTicker(s.relistPeriod)
	defer ticker.Stop()
	failing := false
	for {
		pods, err := s.ListPods(ctx)
		switch {
		case err == nil:
			failing = false
			listener.PodsListed(ctx, pods)
		case ctx.Err() != nil:
			return
		case !failing:
			failing = true
			s.log.WarnS("CRI runtime not listed: listing again every relistPeriod", "relistPeriod", s.relistPeriod, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// FindEndpoint returns the first of DefaultEndpoints that is a socket.
func FindEndpoint() (string, bool) {
	for _, path := range DefaultEndpoints {
		if info, err := os.Stat(path); err == nil && info.Mode().Type() == os.ModeSocket {
			return path, true
		}
	}
	return "", false
}
