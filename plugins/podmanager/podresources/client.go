package podresources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/contivpp/memif-agent/internal/backoff"
	"github.com/contivpp/memif-agent/internal/unixgrpc"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

const (
	// DefaultSocket is kubelet's pod-resources socket.
	DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"
	// DefaultCallTimeout bounds one call to kubelet.
	DefaultCallTimeout = 5 * time.Second
	// Backoff while kubelet's rate limiter refuses calls: one token comes
	// every 10 ms.
	rateLimitMinBackoff = 10 * time.Millisecond
	rateLimitMaxBackoff = 200 * time.Millisecond
)

// ErrPodNotFound is matched by the error of GetPod for a pod kubelet does not
// know.
var ErrPodNotFound = errors.New("pod not known to kubelet")

// Client asks kubelet's pod-resources API. It is safe for concurrent use.
type Client struct {
	socket           string
	callTimeout      time.Duration
	conn             *grpc.ClientConn
	lister           podresourcesv1.PodResourcesListerClient
	getUnimplemented atomic.Bool
}

// New returns a client of the pod-resources socket at socketPath (empty
// means DefaultSocket). Nothing is dialled until the first call, so kubelet
// may start later. A callTimeout of zero means DefaultCallTimeout.
func New(socketPath string, callTimeout time.Duration) (*Client, error) {
	if socketPath == "" {
		socketPath = DefaultSocket
	}
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	conn, err := unixgrpc.NewClient("pod-resources", socketPath)
	if err != nil {
		return nil, err
	}
	return &Client{
		socket:      socketPath,
		callTimeout: callTimeout,
		conn:        conn,
		lister:      podresourcesv1.NewPodResourcesListerClient(conn),
	}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// ListPods returns every pod kubelet has admitted, ordered by pod ID, with
// each container's device IDs by resource name.
func (c *Client) ListPods(ctx context.Context) ([]podapi.PodState, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	var response *podresourcesv1.ListPodResourcesResponse
	err := retryRateLimited(ctx, func() (err error) {
		response, err = c.lister.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list pod resources at %s (is kubelet running?): %w", c.socket, err)
	}
	pods := make([]podapi.PodState, 0, len(response.GetPodResources()))
	for _, resources := range response.GetPodResources() {
		pods = append(pods, podState(resources))
	}
	sort.Slice(pods, func(a, b int) bool { return pods[a].Pod.ID.String() < pods[b].Pod.ID.String() })
	return pods, nil
}

// GetPod returns one pod, or an error matching ErrPodNotFound when kubelet
// does not know it. kubelets without Get (before 1.27), and those where it is
// off (1.27 to 1.33 unless the KubeletPodResourcesGet gate is on), are asked
// with List instead, from the first such answer on.
func (c *Client) GetPod(ctx context.Context, pod podapi.PodID) (podapi.PodState, error) {
	if !c.getUnimplemented.Load() {
		state, err := c.get(ctx, pod)
		if !getUnavailable(err) {
			return state, err
		}
		c.getUnimplemented.Store(true)
	}
	pods, err := c.ListPods(ctx)
	if err != nil {
		return podapi.PodState{}, err
	}
	for _, state := range pods {
		if state.Pod.ID == pod {
			return state, nil
		}
	}
	return podapi.PodState{}, fmt.Errorf("pod %s: %w", pod, ErrPodNotFound)
}

func (c *Client) get(ctx context.Context, pod podapi.PodID) (podapi.PodState, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	var response *podresourcesv1.GetPodResourcesResponse
	err := retryRateLimited(ctx, func() (err error) {
		response, err = c.lister.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: pod.Name, PodNamespace: pod.Namespace})
		return err
	})
	if isNotFound(err) {
		return podapi.PodState{}, fmt.Errorf("pod %s: %w", pod, ErrPodNotFound)
	}
	if err != nil {
		return podapi.PodState{}, fmt.Errorf("get pod resources of %s at %s: %w", pod, c.socket, err)
	}
	return podState(response.GetPodResources()), nil
}

// retryRateLimited runs call again while kubelet refuses it with
// ResourceExhausted (its pod-resources server admits 100 calls a second,
// bursts of 10), until ctx ends.
func retryRateLimited(ctx context.Context, call func() error) error {
	delay := backoff.New(rateLimitMinBackoff, rateLimitMaxBackoff)
	for {
		err := call()
		if status.Code(err) != codes.ResourceExhausted {
			return err
		}
		if !delay.Wait(ctx) {
			return err
		}
	}
}

// getUnavailable recognises kubelet's answer when it has no Get
// (Unimplemented) or has it off: "PodResources API Get method disabled", a
// plain error (codes.Unknown).
func getUnavailable(err error) bool {
	st := status.Convert(err)
	return err != nil && (st.Code() == codes.Unimplemented ||
		st.Code() == codes.Unknown && strings.Contains(st.Message(), "Get method disabled"))
}

// isNotFound recognises kubelet's answer for an unknown pod, which (up to
// v1.37 at least) is a plain error, not codes.NotFound.
func isNotFound(err error) bool {
	if err == nil {
		return false
	}
	st := status.Convert(err)
	return st.Code() == codes.NotFound ||
		(st.Code() == codes.Unknown && strings.Contains(st.Message(), "not found"))
}

func podState(resources *podresourcesv1.PodResources) podapi.PodState {
	state := podapi.PodState{Pod: podapi.Pod{ID: podapi.PodID{Namespace: resources.GetNamespace(), Name: resources.GetName()}}}
	for _, container := range resources.GetContainers() {
		state.Containers = append(state.Containers, podapi.PodContainer{
			Name:      container.GetName(),
			DeviceIDs: deviceIDs(container.GetDevices()),
		})
	}
	sort.Slice(state.Containers, func(a, b int) bool { return state.Containers[a].Name < state.Containers[b].Name })
	return state
}

// deviceIDs merges the container's devices by resource name, each list
// sorted; nil when none. kubelet lists them in no fixed order (v1.37 builds
// the list from a map, containerDevicesFromResourceDeviceInstances), so an
// unsorted list would differ from one call to the next while nothing changed.
func deviceIDs(devices []*podresourcesv1.ContainerDevices) map[string][]string {
	var byResource map[string][]string
	for _, device := range devices {
		if len(device.GetDeviceIds()) == 0 {
			continue
		}
		if byResource == nil {
			byResource = map[string][]string{}
		}
		byResource[device.GetResourceName()] = append(byResource[device.GetResourceName()], device.GetDeviceIds()...)
	}
	for _, ids := range byResource {
		slices.Sort(ids)
	}
	return byResource
}
