package memifwiring_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/gogo/protobuf/jsonpb"
	"github.com/ligato/cn-infra/rpc/rest"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
)

// newREST returns cn-infra's REST plugin, initialized to serve on a free
// loopback port from its AfterInit until the test ends, and its base URL.
// Plugins register their handlers between Init and AfterInit, as in the
// agent.
func newREST(t testing.TB) (*rest.Plugin, string) {
	t.Helper()
	endpoint := "127.0.0.1:" + loopback.FreePort(t)
	plugin := rest.NewPlugin(rest.UseConf(rest.Config{Endpoint: endpoint}))
	if err := plugin.Init(); err != nil {
		t.Fatalf("REST Init: %v", err)
	}
	t.Cleanup(func() { plugin.Close() })
	return plugin, "http://" + endpoint
}

// restDumpInterfaces reads the vpp interfaces from the scheduler's REST
// dump (GET /scheduler/dump), as an operator would with curl.
func (a *testAgent) restDumpInterfaces(t testing.TB) map[string]*vpp_interfaces.Interface {
	t.Helper()
	query := url.Values{"key-prefix": {vpp_interfaces.ModelInterface.KeyPrefix()}, "view": {"NB"}}
	dumpURL := a.restURL + "/scheduler/dump?" + query.Encode()
	response, err := http.Get(dumpURL)
	if err != nil {
		t.Fatalf("GET %s: %v", dumpURL, err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil || response.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s (%v)", dumpURL, response.StatusCode, body, err)
	}
	var dump []struct {
		Key   string
		Value struct{ ProtoMsgName, ProtoMsgData string }
	}
	if err := json.Unmarshal(body, &dump); err != nil {
		t.Fatalf("decode the scheduler dump: %v", err)
	}
	interfaces := map[string]*vpp_interfaces.Interface{}
	for _, kv := range dump {
		iface := &vpp_interfaces.Interface{}
		if err := jsonpb.UnmarshalString(kv.Value.ProtoMsgData, iface); err != nil {
			t.Fatalf("decode %s from the scheduler dump: %v", kv.Key, err)
		}
		interfaces[iface.Name] = iface
	}
	return interfaces
}
