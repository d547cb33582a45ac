package metrics_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/metrics"
	"github.com/contivpp/memif-agent/plugins/metrics/listener"
	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

func writeConfig(t *testing.T, content string) configfile.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "metrics.conf")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return configfile.File(path)
}

// TestServesTheRegistryOnThePodIP: with no address in metrics.conf the
// plugin serves on $MEMIF_AGENT_POD_IP and the port of metrics.conf,
// until Close.
func TestServesTheRegistryOnThePodIP(t *testing.T) {
	t.Setenv(listener.AddressEnv, "127.0.0.3")
	port := loopback.FreePort(t)
	registry := prometheus.NewRegistry()
	registry.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "memif_agent_plugin_test", Help: "Test gauge."}))
	plugin := metrics.NewPlugin(metrics.UseDeps(func(deps *metrics.Deps) {
		deps.Cfg = writeConfig(t, "port: "+port+"\n")
		deps.Gatherer = registry
	}))
	if err := plugin.Init(); err != nil {
		t.Fatal(err)
	}
	if err := plugin.AfterInit(); err != nil {
		t.Fatal(err)
	}
	if plugin.Endpoint() != "127.0.0.3:"+port {
		t.Errorf("endpoint %s, want 127.0.0.3:%s", plugin.Endpoint(), port)
	}
	resp, err := http.Get("http://127.0.0.3:" + port + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(body), "memif_agent_plugin_test 0") {
		t.Errorf("GET /metrics = %q, %v; want the registry's gauge", body, err)
	}
	if err := plugin.Close(); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get("http://127.0.0.3:" + port + "/metrics"); err == nil {
		resp.Body.Close()
		t.Error("GET /metrics answered after Close")
	}
}

// TestBadConfigStopsTheStart: an unknown key fails Init naming the file
// and the key, as every config file of the agent does.
func TestBadConfigStopsTheStart(t *testing.T) {
	cfg := writeConfig(t, "listen: 0.0.0.0:9752\n")
	plugin := metrics.NewPlugin(metrics.UseDeps(func(deps *metrics.Deps) { deps.Cfg = cfg }))
	err := plugin.Init()
	if err == nil || !strings.Contains(err.Error(), string(cfg)) || !strings.Contains(err.Error(), `"listen"`) {
		t.Fatalf("Init = %v, want an error naming %s and the key listen", err, cfg)
	}
}

// TestHandOverStopsServing: handing the node over to the agent replacing
// this one frees the address for it, before or after AfterInit.
func TestHandOverStopsServing(t *testing.T) {
	for _, before := range []bool{false, true} {
		port := loopback.FreePort(t)
		plugin := metrics.NewPlugin(metrics.UseDeps(func(deps *metrics.Deps) {
			deps.Cfg = writeConfig(t, "address: 127.0.0.1\nport: "+port+"\n")
		}))
		if err := plugin.Init(); err != nil {
			t.Fatal(err)
		}
		if before {
			plugin.HandOver(t.Context(), "successor-uid")
		}
		if err := plugin.AfterInit(); err != nil {
			t.Fatal(err)
		}
		if !before {
			plugin.HandOver(t.Context(), "successor-uid")
		}
		successor, err := listener.Start("127.0.0.1:"+port, prometheus.NewRegistry(), testlog.FailOnError(t))
		if err != nil {
			t.Fatalf("handed over (before AfterInit: %v), the successor cannot listen: %v", before, err)
		}
		if err := successor.Close(); err != nil {
			t.Error(err)
		}
		if err := plugin.Close(); err != nil {
			t.Error(err)
		}
	}
}
