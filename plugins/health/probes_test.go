package health

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ligato/cn-infra/health/statuscheck"
	"github.com/ligato/cn-infra/rpc/rest"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/health/probesocket"
	"github.com/contivpp/memif-agent/test/kit/loopback"
)

// TestProbesOverHTTPAndTheProbeSocket serves the probes on cn-infra's real
// HTTP server on loopback and on the probe socket, and reads them from
// both: the same answers.
func TestProbesOverHTTPAndTheProbeSocket(t *testing.T) {
	endpoint := "127.0.0.1:" + loopback.FreePort(t)
	httpServer := rest.NewPlugin(rest.UseConf(rest.Config{Endpoint: endpoint}))
	probeSocket := filepath.Join(t.TempDir(), "probe.sock")
	health := NewPlugin(UseDeps(func(deps *Deps) {
		deps.Cfg = writeConfig(t, "probe-socket: "+probeSocket+"\n")
		deps.HTTPHandlers = httpServer
	}))
	for _, start := range []func() error{httpServer.Init, health.Init, httpServer.AfterInit, health.ServeProbes} {
		if err := start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		httpServer.Close()
		if err := health.Close(); err != nil {
			t.Error(err)
		}
	})
	health.Register("controller", nil)
	transports := []struct {
		name string
		get  func(t *testing.T, path string) (int, probeAnswer)
	}{
		{"http", func(t *testing.T, path string) (int, probeAnswer) { return getProbe(t, "http://"+endpoint+path) }},
		{"probe socket", func(t *testing.T, path string) (int, probeAnswer) { return askProbe(t, probeSocket, path) }},
	}

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
		health.ReportStateChange("controller", step.report, step.err)
		for _, transport := range transports {
			t.Run(step.name+"/"+transport.name, func(t *testing.T) {
				code, answer := transport.get(t, ReadinessPath)
				if code != step.wantReadiness {
					t.Errorf("readiness = %d, want %d", code, step.wantReadiness)
				}
				if answer.State != step.wantState || len(answer.Plugins) != 1 || answer.Plugins[0].Error != step.wantError {
					t.Errorf("readiness says %+v, want state %s and controller error %q", answer, step.wantState, step.wantError)
				}
				if code, _ := transport.get(t, LivenessPath); code != http.StatusOK {
					t.Errorf("liveness = %d, want 200 whatever the plugins report", code)
				}
			})
		}
	}
}

func writeConfig(t *testing.T, content string) configfile.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "health.conf")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return configfile.File(path)
}

func TestConfigRefusesARelativeSocket(t *testing.T) {
	health := NewPlugin(UseDeps(func(deps *Deps) { deps.Cfg = writeConfig(t, "probe-socket: probe.sock\n") }))
	err := health.Init()
	var keyErr *configfile.KeyError
	if !errors.As(err, &keyErr) || keyErr.Key != "probe-socket" || !strings.Contains(err.Error(), "absolute path") {
		t.Errorf("Init with a relative probe-socket: %v; want the key named", err)
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

func askProbe(t *testing.T, socket, path string) (int, probeAnswer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := probesocket.Ask(ctx, socket, path)
	if err != nil {
		t.Fatal(err)
	}
	var answer probeAnswer
	if err := json.Unmarshal(got.Body, &answer); err != nil {
		t.Fatalf("probe %s: decode %q: %v", path, got.Body, err)
	}
	return got.Code, answer
}
