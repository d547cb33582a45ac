package agentwiring

import (
	"bytes"
	"net/http"
	"regexp"

	"github.com/gorilla/mux"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/unrolled/render"
)

// secretRedactingHandlers wraps the HTTP server for the KV scheduler's REST
// API. The scheduler's dumps, transaction history, key timelines and graphs
// hold the vswitch-side memif models, secrets included. The agent serves
// them with every secret masked: secrets leave the agent only through the
// node API, on request, behind its socket's permissions.
type secretRedactingHandlers struct {
	rest.HTTPHandlers
}

// RegisterHTTPHandler implements rest.HTTPHandlers: the handler's response
// is buffered and written with its secrets masked.
func (h secretRedactingHandlers) RegisterHTTPHandler(path string, provider rest.HandlerProvider, methods ...string) *mux.Route {
	return h.HTTPHandlers.RegisterHTTPHandler(path, func(formatter *render.Render) http.HandlerFunc {
		handler := provider(formatter)
		return func(writer http.ResponseWriter, request *http.Request) {
			response := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
			handler(response, request)
			for name, values := range response.header {
				writer.Header()[name] = values
			}
			writer.Header().Del("Content-Length")
			writer.WriteHeader(response.status)
			writer.Write(maskSecrets(response.body.Bytes()))
		}
	}, methods...)
}

// bufferedResponse is an http.ResponseWriter that keeps what is written.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *bufferedResponse) Header() http.Header { return r.header }
func (r *bufferedResponse) Write(data []byte) (int, error) {
	if r.body.Len()+len(data) > httpMaxResponseBytes {
		panic(http.ErrAbortHandler) // see boundedResponses
	}
	return r.body.Write(data)
}
func (r *bufferedResponse) WriteHeader(status int) { r.status = status }

// secretField matches a secret field up to the start of its value, in the
// forms the scheduler writes a proto value: JSON ("secret":"…"), JSON inside
// a JSON string (\"secret\":\"…\"), protobuf text (secret:"…") and
// protobuf text inside a JSON or DOT string (secret:\"…\"). Secrets are
// base64url, so the value ends at the next quote or backslash.
var secretField = regexp.MustCompile(`((?:\\*")?secret(?:\\*")?\s*:\s*\\*")[^"\\]*`)

// maskSecrets replaces the value of every secret field in body by "***".
func maskSecrets(body []byte) []byte {
	return secretField.ReplaceAll(body, []byte("${1}***"))
}
