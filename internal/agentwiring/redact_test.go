package agentwiring

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/rpc/rest"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"

	"github.com/contivpp/memif-agent/test/kit/loopback"
)

func TestMaskSecrets(t *testing.T) {
	cases := []struct {
		name string
		body string
		want string
	}{
		{"json field", `{"memif":{"master":true,"secret":"s3cr3t-Value_1"}}`, `{"memif":{"master":true,"secret":"***"}}`},
		{"json field with spaces", `"secret" : "abc"`, `"secret" : "***"`},
		{"json inside a json string", `"value":"{\"memif\":{\"secret\":\"abc\"}}"`, `"value":"{\"memif\":{\"secret\":\"***\"}}"`},
		{"proto text", `memif:<master:true secret:"abc" > `, `memif:<master:true secret:"***" > `},
		{"proto text in a json string", `"value":"memif:<secret:\"abc\" id:1>"`, `"value":"memif:<secret:\"***\" id:1>"`},
		{"empty secret", `{"secret":""}`, `{"secret":"***"}`},
		{"no secret", `{"name":"memif_default_web_app_0"}`, `{"name":"memif_default_web_app_0"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(maskSecrets([]byte(tc.body))); got != tc.want {
				t.Errorf("maskSecrets(%s) = %s, want %s", tc.body, got, tc.want)
			}
		})
	}
}

// TestSchedulerRESTServesNoSecret commits a memif model with a secret to
// the real KV scheduler behind cn-infra's real HTTP server, wrapped as the
// agent wraps it, and reads every scheduler view that shows values.
func TestSchedulerRESTServesNoSecret(t *testing.T) {
	const secret = "Zm9vYmFyYmF6cXV4cXV1eA"
	endpoint := "127.0.0.1:" + loopback.FreePort(t)
	httpServer := rest.NewPlugin(rest.UseConf(rest.Config{Endpoint: endpoint}))
	scheduler := kvscheduler.NewPlugin(kvscheduler.UseDeps(func(deps *kvscheduler.Deps) {
		deps.HTTPHandlers = secretRedactingHandlers{httpServer}
		deps.Cfg = withAgentDefaults(config.ForPlugin("kvscheduler"))
	}))
	for _, start := range []func() error{httpServer.Init, scheduler.Init, httpServer.AfterInit} {
		if err := start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		scheduler.Close()
		httpServer.Close()
	})
	memif := &vpp_interfaces.Interface{
		Name: "memif_default_web_app_0", Type: vpp_interfaces.Interface_MEMIF, Enabled: true,
		Link: &vpp_interfaces.Interface_Memif{Memif: &vpp_interfaces.MemifLink{Master: true, Secret: secret, SocketFilename: "/run/memif.sock"}},
	}
	txn := scheduler.StartNBTransaction()
	txn.SetValue(vpp_interfaces.InterfaceKey(memif.Name), memif)
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{
		"/scheduler/txn-history",
		"/scheduler/txn-history?format=text",
		"/scheduler/key-timeline?key=" + vpp_interfaces.InterfaceKey(memif.Name),
		"/scheduler/graph-snapshot",
	} {
		t.Run(path, func(t *testing.T) {
			response, err := http.Get("http://" + endpoint + path)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(response.Body)
			response.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(body), secret) {
				t.Errorf("GET %s shows the memif secret", path)
			}
			if !strings.Contains(string(body), "memif_default_web_app_0") {
				t.Errorf("GET %s does not show the memif at all; the test reads the wrong view:\n%.400s", path, body)
			}
		})
	}
}
