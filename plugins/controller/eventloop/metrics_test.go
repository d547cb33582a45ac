package eventloop

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

func TestMetricsAreExposed(t *testing.T) {
	registry := prometheus.NewRegistry()
	handlers := newHandlers(&callLog{}, "h1", "h2")
	handlers[1].failUpdate = map[string]bool{"Bad": true, "Undone": true}
	cfg := testConfig()
	loop := newTestLoop(t, cfg, Deps{Handlers: asHandlers(handlers), Metrics: registry})
	queued := []*testEvent{
		newEvent("Good", controllerapi.BestEffort, controllerapi.Forward),
		newEvent("Good", controllerapi.BestEffort, controllerapi.Forward),
		newEvent("Bad", controllerapi.BestEffortIgnoreErrors, controllerapi.Forward),
		newEvent("Undone", controllerapi.RevertOnFailure, controllerapi.Forward),
	}
	for _, event := range queued {
		mustPush(t, loop, event)
	}
	server := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	defer server.Close()

	before := scrape(t, server.URL)
	if !strings.Contains(before, "memif_agent_controller_event_queue_depth 4\n") {
		t.Errorf("queue depth before Start is not 4 in:\n%s", before)
	}
	loop.Start()
	for _, event := range queued {
		_ = mustWait(t, event)
	}
	after := scrape(t, server.URL)
	for _, want := range []string{
		`memif_agent_controller_events_total{event="StartupResync",outcome="ok"} 1`,
		`memif_agent_controller_events_total{event="Good",outcome="ok"} 2`,
		`memif_agent_controller_events_total{event="Bad",outcome="error"} 1`,
		`memif_agent_controller_events_total{event="Undone",outcome="reverted"} 1`,
		`memif_agent_controller_event_processing_seconds_count{event="Good"} 2`,
		"memif_agent_controller_event_queue_depth 0\n",
		// The commits may merge: how many there are depends on timing.
		`memif_agent_controller_commits_total{outcome="ok"} `,
	} {
		if !strings.Contains(after, want) {
			t.Errorf("scrape lacks %s; got:\n%s", want, after)
		}
	}
}

func TestMetricsRegisteredTwiceIsAnError(t *testing.T) {
	registry := prometheus.NewRegistry()
	newTestLoop(t, testConfig(), Deps{Metrics: registry})
	if _, err := New(testConfig(), Deps{Committer: &recordingCommitter{}, Metrics: registry}); err == nil {
		t.Errorf("a second loop registered the same metrics without error")
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read metrics: %v", err)
	}
	return string(body)
}

func TestClosedLoopUnregistersMetrics(t *testing.T) {
	registry := prometheus.NewRegistry()
	first := newTestLoop(t, testConfig(), Deps{Metrics: registry})
	_ = first.Close()
	if _, err := New(testConfig(), Deps{Committer: &recordingCommitter{}, Metrics: registry}); err != nil {
		t.Errorf("a loop could not register its metrics after the previous loop closed: %v", err)
	}
}
