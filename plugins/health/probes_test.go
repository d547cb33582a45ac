package health

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/ligato/cn-infra/health/statuscheck"
	"github.com/ligato/cn-infra/rpc/rest"
)

// TestProbesOverHTTP serves the probes on cn-infra's real HTTP server on
// loopback and reads them as kubelet would.
func TestProbesOverHTTP(t *testing.T) {
	endpoint := "127.0.0.1:" + loopback.FreePort(t)
	httpServer := rest.NewPlugin(rest.UseConf(rest.Config{Endpoint: endpoint}))
	health := NewPlugin(UseDeps(func(deps *Deps) { deps.HTTPHandlers = httpServer }))
	for _, start := range []func() error{httpServer.Init, health.Init, httpServer.AfterInit} {
		if err := start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { httpServer.Close() })
	health.Register("controller", nil)

	steps := []struct {
		name          string
		report        statuscheck.PluginState
		err           error
		wantReadiness int
		wantState     string
		wantError     string
	}{
		{"starting", statuscheck.Init, nil, http.StatusServiceUnavailable, "INIT", ""},
		{"resynced", statuscheck.OK, nil, http.StatusOK, "OK", ""},
		{"healing failed", statuscheck.Error, errors.New("resync failed: vswitch refused"), http.StatusServiceUnavailable, "ERROR", "resync failed: vswitch refused"},
		{"healed", statuscheck.OK, nil, http.StatusOK, "OK", ""},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			health.ReportStateChange("controller", step.report, step.err)
			code, answer := getProbe(t, "http://"+endpoint+ReadinessPath)
			if code != step.wantReadiness {
				t.Errorf("readiness = %d, want %d", code, step.wantReadiness)
			}
			if answer.State != step.wantState || len(answer.Plugins) != 1 || answer.Plugins[0].Error != step.wantError {
				t.Errorf("readiness says %+v, want state %s and controller error %q", answer, step.wantState, step.wantError)
			}
			if code, _ := getProbe(t, "http://"+endpoint+LivenessPath); code != http.StatusOK {
				t.Errorf("liveness = %d, want 200 whatever the plugins report", code)
			}
		})
	}
}

func getProbe(t *testing.T, url string) (int, probeAnswer) {
	t.Helper()
	response, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	var answer probeAnswer
	if err := json.NewDecoder(response.Body).Decode(&answer); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
	return response.StatusCode, answer
}
