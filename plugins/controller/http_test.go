package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	cnprometheus "github.com/ligato/cn-infra/rpc/prometheus"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/test/kit/loopback"
)

// TestControllerServedByCNInfraREST runs the controller behind cn-infra's
// own REST and Prometheus plugins on loopback and uses its API as a user
// would with curl.
func TestControllerServedByCNInfraREST(t *testing.T) {
	endpoint := "127.0.0.1:" + loopback.FreePort(t)
	restPlugin := rest.NewPlugin(rest.UseConf(rest.Config{Endpoint: endpoint}))
	promPlugin := cnprometheus.NewPlugin(cnprometheus.UseDeps(func(deps *cnprometheus.Deps) { deps.HTTP = restPlugin }))
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) { deps.HTTPHandlers = restPlugin }))
	controller := NewPlugin(UseDeps(func(deps *Deps) {
		deps.KVScheduler = scheduler
		deps.HTTPHandlers = restPlugin
		deps.Prometheus = promPlugin
		deps.EventHandlers = []controllerapi.EventHandler{&memifHandler{name: "wiring"}}
	}))
	inits := []func() error{restPlugin.Init, promPlugin.Init, scheduler.Init, controller.Init,
		restPlugin.AfterInit, promPlugin.AfterInit, controller.AfterInit}
	for _, init := range inits {
		if err := init(); err != nil {
			t.Fatalf("start plugins: %v", err)
		}
	}
	t.Cleanup(func() {
		for _, closer := range []func() error{controller.Close, scheduler.Close, promPlugin.Close, restPlugin.Close} {
			if err := closer(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	base := "http://" + endpoint

	resp, err := http.Post(base+eventloop.ResyncPath, "", nil)
	if err != nil {
		t.Fatalf("POST resync: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST resync = %d, want 200", resp.StatusCode)
	}

	var records []controllerapi.EventRecord
	getJSON(t, base+eventloop.HistoryPath+"?last=1", &records)
	if len(records) != 1 || records[0].Name != eventloop.RequestedResyncName || records[0].Error != "" {
		t.Errorf("last event = %+v, want the requested resync, without error", records)
	}

	metrics := get(t, base+cnprometheus.DefaultRegistry)
	want := `memif_agent_controller_events_total{event="RequestedResync",outcome="ok"} 1`
	if !strings.Contains(metrics, want) {
		t.Errorf("GET /metrics lacks %s", want)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s (%v)", url, resp.StatusCode, body, err)
	}
	return string(body)
}

func getJSON(t *testing.T, url string, into interface{}) {
	t.Helper()
	if err := json.Unmarshal([]byte(get(t, url)), into); err != nil {
		t.Fatalf("decode %s: %v", url, err)
	}
}
