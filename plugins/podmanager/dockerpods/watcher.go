package dockerpods

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/internal/backoff"
	"github.com/contivpp/memif-agent/internal/logs"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Default reconnection backoff of the Watcher.
const (
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
)

// replayWindow is how far back a new event stream starts: Docker replays the
// events it still holds, which closes the gap between subscribing and
// listing. Replayed events only cause a re-read of their pod.
const replayWindow = time.Second

// watchedActions are the container events that change a pod's existence or
// its evidence.
var watchedActions = []string{"create", "start", "die", "destroy"}

// Listener hears what a Watcher sees. Calls come from the Watcher's goroutine,
// one at a time, in the order Docker reported the changes.
type Listener = podapi.RuntimeListener

// Watcher follows Docker's container events and tells a Listener about pod
// changes, reconnecting with exponential backoff when the stream breaks.
type Watcher struct {
	client     *docker.Client
	inspector  *Inspector
	listener   Listener
	log        logs.Logger
	minBackoff time.Duration
	maxBackoff time.Duration
}

// NewWatcher returns a Watcher; zero backoffs take the defaults. log hears
// of what is skipped and of the event stream's breaks; nil: nothing is
// logged.
func NewWatcher(client *docker.Client, listener Listener, log logs.Logger, minBackoff, maxBackoff time.Duration) *Watcher {
	if log == nil {
		log = logs.Discard()
	}
	if minBackoff <= 0 {
		minBackoff = DefaultMinBackoff
	}
	if maxBackoff < minBackoff {
		maxBackoff = max(DefaultMaxBackoff, minBackoff)
	}
	return &Watcher{
		client:     client,
		inspector:  NewInspector(client, log),
		listener:   listener,
		log:        log,
		minBackoff: minBackoff,
		maxBackoff: maxBackoff,
	}
}

// Run watches until ctx ends. The caller owns the goroutine it runs in.
func (w *Watcher) Run(ctx context.Context) {
	delay := backoff.New(w.minBackoff, w.maxBackoff)
	for {
		connected, err := w.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			delay.Reset()
		}
		wait := delay.Next()
		w.log.WarnS("docker event stream broke: reconnecting", "endpoint", w.client.Endpoint(), "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// session subscribes to events, lists every pod, then handles events until
// the stream or a read fails. connected tells whether the subscription
// succeeded.
func (w *Watcher) session(ctx context.Context) (connected bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	response, err := w.subscribe(ctx)
	if err != nil {
		return false, err
	}
	defer response.Body.Close()
	pods, err := w.inspector.ListPods(ctx)
	if err != nil {
		return true, err
	}
	w.listener.PodsListed(ctx, pods)
	decoder := json.NewDecoder(response.Body)
	for {
		var event docker.APIEvents
		if err := decoder.Decode(&event); err != nil {
			return true, fmt.Errorf("read docker event: %w", err)
		}
		if err := w.handle(ctx, event); err != nil {
			return true, err
		}
	}
}

func (w *Watcher) handle(ctx context.Context, event docker.APIEvents) error {
	labels, err := ParseLabels(event.Actor.Attributes)
	if err != nil {
		w.log.WarnS("skipping a docker event", "action", event.Action, "container", event.Actor.ID, "err", err)
		return nil
	}
	state, exists, err := w.inspector.GetPod(ctx, labels.Pod.ID)
	if err != nil {
		return fmt.Errorf("read pod %s after docker %s event: %w", labels.Pod, event.Action, err)
	}
	w.listener.PodChanged(ctx, labels.Pod, state, exists)
	return nil
}

// subscribe opens Docker's event stream for kubelet containers. Docker sends
// the response header once the subscription is in place.
func (w *Watcher) subscribe(ctx context.Context) (*http.Response, error) {
	eventsURL, err := w.eventsURL()
	if err != nil {
		return nil, err
	}
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, eventsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("build docker events request %s: %w", eventsURL, err)
	}
	response, err := w.client.HTTPClient.Do(request)
	if err != nil {
		// The request URL (filters, since) would only bury the reason.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, fmt.Errorf("subscribe to docker events at %s: %w", w.client.Endpoint(), err)
	}
	if response.StatusCode != http.StatusOK {
		response.Body.Close()
		return nil, fmt.Errorf("subscribe to docker events at %s: status %s", w.client.Endpoint(), response.Status)
	}
	return response, nil
}

func (w *Watcher) eventsURL() (string, error) {
	endpoint, err := url.Parse(w.client.Endpoint())
	if err != nil {
		return "", fmt.Errorf("parse docker endpoint %q: %w", w.client.Endpoint(), err)
	}
	base := url.URL{Scheme: "http", Host: endpoint.Host}
	switch endpoint.Scheme {
	case "unix":
		// The client's transport dials the socket; the host is not used.
		base.Host = "docker.sock"
	case "https":
		base.Scheme = "https"
	}
	filters, err := json.Marshal(map[string][]string{
		"type":  {"container"},
		"label": {LabelPodUID},
		"event": watchedActions,
	})
	if err != nil {
		return "", fmt.Errorf("encode docker event filters: %w", err)
	}
	since := time.Now().Add(-replayWindow)
	query := url.Values{
		"filters": {string(filters)},
		"since":   {strconv.FormatInt(since.Unix(), 10) + "." + fmt.Sprintf("%09d", since.Nanosecond())},
	}
	base.Path = "/events"
	base.RawQuery = query.Encode()
	return base.String(), nil
}
