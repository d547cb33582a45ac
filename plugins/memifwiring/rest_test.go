package memifwiring_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/gogo/protobuf/jsonpb"
	"github.com/gorilla/mux"
	"github.com/ligato/cn-infra/rpc/rest"
	access "github.com/ligato/cn-infra/rpc/rest/security/model/access-security"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	"github.com/unrolled/render"
)

// restRouter collects the HTTP handlers plugins register, as cn-infra's
// HTTP plugin does, and serves them in-process without a listener.
type restRouter struct {
	router *mux.Router
}

var _ rest.HTTPHandlers = (*restRouter)(nil)

func newRESTRouter() *restRouter { return &restRouter{router: mux.NewRouter()} }

func (r *restRouter) RegisterHTTPHandler(path string, provider rest.HandlerProvider, methods ...string) *mux.Route {
	return r.router.HandleFunc(path, provider(render.New())).Methods(methods...)
}

func (r *restRouter) RegisterPermissionGroup(...*access.PermissionGroup) {}

func (r *restRouter) GetPort() int { return 0 }

// restDumpInterfaces reads the vpp interfaces from the scheduler's REST
// dump (GET /scheduler/dump), as an operator would with curl.
func (a *testAgent) restDumpInterfaces(t *testing.T) map[string]*vpp_interfaces.Interface {
	t.Helper()
	query := url.Values{"key-prefix": {vpp_interfaces.ModelInterface.KeyPrefix()}, "view": {"NB"}}
	request := httptest.NewRequest(http.MethodGet, "/scheduler/dump?"+query.Encode(), nil)
	response := httptest.NewRecorder()
	a.rest.router.ServeHTTP(response, request)
	if response.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", request.URL, response.Code, response.Body)
	}
	var dump []struct {
		Key   string
		Value struct{ ProtoMsgName, ProtoMsgData string }
	}
	if err := json.Unmarshal(response.Body.Bytes(), &dump); err != nil {
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
