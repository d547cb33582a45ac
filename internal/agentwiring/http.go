package agentwiring

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/logging"
	"github.com/ligato/cn-infra/rpc/rest"
	access "github.com/ligato/cn-infra/rpc/rest/security/model/access-security"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"
	"github.com/unrolled/render"

	"github.com/contivpp/memif-agent/internal/connlimit"
	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/plugins/health"
)

// loopbackHTTPHost is where the HTTP server (probes, metrics, event history,
// scheduler dumps) listens unless http.conf names another endpoint.
const loopbackHTTPHost = "127.0.0.1"

// transactionHistoryMinutes is how long the KV scheduler keeps a
// transaction in its history, unless kvscheduler.conf says otherwise.
const transactionHistoryMinutes = 10

// agentDefaults wraps a framework plugin's configuration so that the
// agent's own defaults apply under whatever the plugin's config file sets.
type agentDefaults struct {
	config.PluginConfig
}

func withAgentDefaults(pluginConfig config.PluginConfig) config.PluginConfig {
	return agentDefaults{pluginConfig}
}

// LoadValue implements config.PluginConfig: it sets the agent's defaults on
// value, then lets the config file override them.
func (c agentDefaults) LoadValue(value interface{}) (found bool, err error) {
	switch pluginConfig := value.(type) {
	case *rest.Config:
		// cn-infra listens on 0.0.0.0; a node agent must not expose its
		// endpoints on the node's addresses unless the operator asks for it.
		// The port (from -http-port or the default) is kept.
		port := rest.DefaultHTTPPort
		if _, configuredPort, splitErr := net.SplitHostPort(pluginConfig.Endpoint); splitErr == nil && configuredPort != "" {
			port = configuredPort
		}
		pluginConfig.Endpoint = net.JoinHostPort(loopbackHTTPHost, port)
	case *kvscheduler.Config:
		// The transaction summary prints every value, memif secrets
		// included, to the log.
		pluginConfig.PrintTxnSummary = false
		// Recorded transactions stay in memory for this long (minutes):
		// cn-infra's day let resyncs grow the heap by hundreds of MB.
		pluginConfig.TransactionHistoryAgeLimit = transactionHistoryMinutes
	}
	return c.PluginConfig.LoadValue(value)
}

// Limits of the HTTP server. Its endpoints answer in milliseconds, except
// a resync (bounded by the loop's commit timeout) and the dumps; a client
// slower than these, or holding a connection idle, is cut off, so that
// local users cannot hold the agent's descriptors.
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 10 * time.Second
	httpWriteTimeout      = 2 * time.Minute
	httpIdleTimeout       = 30 * time.Second
	httpMaxHeaderBytes    = 16 << 10
	// MaxHTTPConnections bounds the connections held open; beyond it
	// one not being served is closed to make room (internal/connlimit),
	// so that no client makes another's request wait.
	MaxHTTPConnections = 64
	// httpMaxResponseBytes bounds one response: a larger one (a
	// scheduler dump or history over a long time) is cut off with an
	// error rather than held in memory.
	httpMaxResponseBytes = 8 << 20
)

// allowChangesFlag turns on the HTTP endpoints that change the agent
// (resync, log levels, the scheduler's downstream resync). Off, they
// answer 403: any local user can reach the loopback port.
const allowChangesFlag = "http-allow-changes"

// DeferredHTTP is the agent's HTTP server: cn-infra's HTTP plugin reads
// its configuration (http.conf, -http-port); this type routes and serves.
//
// It starts at the end of the agent's start (ServingStarter): cn-infra's
// Prometheus and log-manager plugins add their routes in AfterInit, and
// the router must not change while it serves; started last, its probes
// answer only once every plugin has started. It serves read-only
// endpoints unless -http-allow-changes is set, bounds every response,
// times out slow and idle clients, and holds at most MaxHTTPConnections
// connections, never making a new one wait (internal/connlimit).
type DeferredHTTP struct {
	server *rest.Plugin

	router       *mux.Router
	formatter    *render.Render
	allowChanges bool

	// servingMu guards serving, served and handedOver: the node may be
	// handed over (HandOver) from another goroutine.
	servingMu  sync.Mutex
	serving    *http.Server
	served     chan struct{}
	handedOver bool
}

var _ rest.HTTPHandlers = (*DeferredHTTP)(nil)

// String implements infra.Plugin.
func (h *DeferredHTTP) String() string { return h.server.String() }

// Init implements infra.Plugin: it loads the configuration.
func (h *DeferredHTTP) Init() error {
	if err := h.server.Init(); err != nil {
		return err
	}
	cfg := h.server.Config
	switch {
	case cfg.EnableTokenAuth || len(cfg.ClientBasicAuth) > 0 || len(cfg.ClientCerts) > 0:
		return errors.New("http.conf: client authentication (enable-token-auth, client-basic-auth, client-cert-files) is not supported; the server listens on loopback, and what changes the agent is off unless -" + allowChangesFlag + " is set")
	}
	h.router = mux.NewRouter()
	h.formatter = render.New(render.Options{IndentJSON: true})
	h.allowChanges = FlagValue(allowChangesFlag) == "true"
	return nil
}

// Close implements infra.Plugin: it stops serving.
func (h *DeferredHTTP) Close() error {
	h.servingMu.Lock()
	defer h.servingMu.Unlock()
	if h.serving == nil {
		return nil
	}
	err := h.serving.Close()
	<-h.served
	h.serving = nil
	return err
}

// HandOver implements dmapi.HandoverParticipant: the agent replacing this
// one listens on the same host port, so this one stops serving now.
func (h *DeferredHTTP) HandOver(context.Context, string) {
	h.servingMu.Lock()
	h.handedOver = true
	h.servingMu.Unlock()
	if err := h.Close(); err != nil {
		agentLog().WarnS("http server close failed at the handover", "err", err)
	}
}

// SuccessorServing implements dmapi.HandoverParticipant.
func (h *DeferredHTTP) SuccessorServing() {}

// RegisterHTTPHandler implements rest.HTTPHandlers. A handler for any
// method but GET and HEAD changes the agent: unless changes are allowed it
// is replaced by a 403 saying how to allow them.
func (h *DeferredHTTP) RegisterHTTPHandler(path string, provider rest.HandlerProvider, methods ...string) *mux.Route {
	handler := http.Handler(provider(h.formatter))
	if !h.allowChanges && changes(methods) {
		handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, fmt.Sprintf("%s changes the agent, which is off over HTTP; start memif-agent with -%s to allow it", path, allowChangesFlag), http.StatusForbidden)
		})
	}
	return h.router.Handle(path, boundedResponses(handler)).Methods(methods...)
}

func changes(methods []string) bool {
	for _, method := range methods {
		if method != http.MethodGet && method != http.MethodHead {
			return true
		}
	}
	return false
}

// RegisterPermissionGroup implements rest.HTTPHandlers; without token
// authentication there are no permission groups.
func (h *DeferredHTTP) RegisterPermissionGroup(...*access.PermissionGroup) {}

// GetPort implements rest.HTTPHandlers.
func (h *DeferredHTTP) GetPort() int { return h.server.GetPort() }

// serve starts serving on the configured endpoint.
func (h *DeferredHTTP) serve() error {
	h.servingMu.Lock()
	defer h.servingMu.Unlock()
	if h.handedOver {
		return nil
	}
	cfg := h.server.Config
	listener, err := net.Listen("tcp", cfg.Endpoint)
	if err != nil {
		return fmt.Errorf("http server: %w", err)
	}
	h.serving = &http.Server{
		Handler:           h.router,
		ReadHeaderTimeout: orDefault(cfg.ReadHeaderTimeout, httpReadHeaderTimeout),
		ReadTimeout:       orDefault(cfg.ReadTimeout, httpReadTimeout),
		WriteTimeout:      orDefault(cfg.WriteTimeout, httpWriteTimeout),
		IdleTimeout:       orDefault(cfg.IdleTimeout, httpIdleTimeout),
		MaxHeaderBytes:    httpMaxHeaderBytes,
	}
	if cfg.MaxHeaderBytes > 0 {
		h.serving.MaxHeaderBytes = cfg.MaxHeaderBytes
	}
	h.served = make(chan struct{})
	bounded := connlimit.Bound(h.serving, listener, MaxHTTPConnections)
	go func() {
		defer close(h.served)
		if cfg.UseHTTPS() {
			err = h.serving.ServeTLS(bounded, cfg.ServerCertfile, cfg.ServerKeyfile)
		} else {
			err = h.serving.Serve(bounded)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			agentLog().ErrorS(err, "http server stopped", "endpoint", cfg.Endpoint)
		}
	}()
	agentLog().InfoS("http server listening", "endpoint", cfg.Endpoint, "changesAllowed", h.allowChanges)
	return nil
}

func orDefault(configured, fallback time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	return fallback
}

// boundedResponses cuts a response off at httpMaxResponseBytes: the
// connection is aborted, so that the client sees an error, not a
// truncated body it could take for whole.
func boundedResponses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&boundedWriter{ResponseWriter: w}, r)
	})
}

type boundedWriter struct {
	http.ResponseWriter
	written int
}

func (w *boundedWriter) Write(data []byte) (int, error) {
	if w.written+len(data) > httpMaxResponseBytes {
		agentLog().WarnS("http response cut off: narrow the query", "maxBytes", httpMaxResponseBytes)
		panic(http.ErrAbortHandler)
	}
	w.written += len(data)
	return w.ResponseWriter.Write(data)
}

// ServingStarter starts serving, the probe socket first, then the
// deferred HTTP server; it is the agent's last plugin, so its AfterInit
// runs after every other plugin's.
type ServingStarter struct {
	health *health.Plugin
	http   *DeferredHTTP
}

// String implements infra.Plugin.
func (s *ServingStarter) String() string { return "start-serving" }

// Init implements infra.Plugin.
func (s *ServingStarter) Init() error { return nil }

// AfterInit starts serving.
func (s *ServingStarter) AfterInit() error {
	if err := s.health.ServeProbes(); err != nil {
		return err
	}
	agentLog().InfoS("probes served", "socket", s.health.ProbeSocket())
	return s.http.serve()
}

// Close implements infra.Plugin; serving stops in the health plugin's
// and DeferredHTTP's Close.
func (s *ServingStarter) Close() error { return nil }

// agentLog is the agent's own log, where the plugins' is not: cn-infra's
// default logger, structured.
func agentLog() logs.Logger { return logs.FromPlugin(logging.DefaultLogger) }
