package promregistry_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	cnprometheus "github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/internal/promregistry"
	"github.com/contivpp/memif-agent/test/kit/loopback"
)

// startPrometheus runs cn-infra's REST and Prometheus plugins on a free
// loopback port and returns the plugin and the /metrics URL.
func startPrometheus(t *testing.T) (*cnprometheus.Plugin, string) {
	t.Helper()
	endpoint := "127.0.0.1:" + loopback.FreePort(t)
	restPlugin := rest.NewPlugin(rest.UseConf(rest.Config{Endpoint: endpoint}))
	promPlugin := cnprometheus.NewPlugin(cnprometheus.UseDeps(func(deps *cnprometheus.Deps) { deps.HTTP = restPlugin }))
	for _, step := range []func() error{restPlugin.Init, promPlugin.Init, restPlugin.AfterInit, promPlugin.AfterInit} {
		if err := step(); err != nil {
			t.Fatalf("start plugins: %v", err)
		}
	}
	t.Cleanup(func() {
		promPlugin.Close()
		restPlugin.Close()
	})
	return promPlugin, "http://" + endpoint + cnprometheus.DefaultRegistry
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d (%v)", url, resp.StatusCode, err)
	}
	return string(body)
}

func TestDefaultServesMetricsAtTheAgentsMetricsPath(t *testing.T) {
	plugin, url := startPrometheus(t)
	registry := promregistry.Default(plugin)
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "memif_agent_test_total", Help: "Test counter."})
	registry.MustRegister(counter)
	counter.Add(3)
	if got := scrape(t, url); !strings.Contains(got, "memif_agent_test_total 3") {
		t.Errorf("GET /metrics lacks memif_agent_test_total 3:\n%s", got)
	}
	if err := registry.Register(counter); err == nil {
		t.Error("registering the counter twice succeeded, want prometheus's AlreadyRegistered error")
	}
	if !registry.Unregister(counter) {
		t.Fatal("Unregister = false, want the counter removed")
	}
	if got := scrape(t, url); strings.Contains(got, "memif_agent_test_total") {
		t.Error("GET /metrics still shows memif_agent_test_total after Unregister")
	}
}
