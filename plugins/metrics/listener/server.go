package listener

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/contivpp/memif-agent/internal/connlimit"
	"github.com/contivpp/memif-agent/internal/logs"
)

// MetricsPath is where the metrics are served.
const MetricsPath = "/metrics"

// Limits of the server. A scrape gathers the agent's metrics in
// milliseconds (the memif counters are read from VPP by the link
// watcher, not at the scrape); a client slower than these, or holding a
// connection idle, is cut off, so that no client can hold the agent's
// descriptors or memory. Beyond MaxConnections a connection not being
// served is closed to make room (internal/connlimit), so that no client makes a
// scrape wait.
const (
	MaxConnections     = 64
	MaxScrapesInFlight = 4
	ScrapeTimeout      = 10 * time.Second
	readHeaderTimeout  = 5 * time.Second
	readTimeout        = 10 * time.Second
	writeTimeout       = 30 * time.Second
	idleTimeout        = 30 * time.Second
	maxHeaderBytes     = 8 << 10
)

// Server serves the metrics until Close.
type Server struct {
	listener net.Listener
	http     *http.Server
	served   chan struct{}
}

// Start listens on endpoint (host:port) and serves what gatherer gathers
// at MetricsPath; log gets the server's failure, should it stop before
// Close.
func Start(endpoint string, gatherer prometheus.Gatherer, log logs.Logger) (*Server, error) {
	listener, err := net.Listen("tcp", endpoint)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	s := &Server{
		listener: listener,
		http: &http.Server{
			Handler:           Handler(gatherer),
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
		},
		served: make(chan struct{}),
	}
	bounded := connlimit.Bound(s.http, listener, MaxConnections)
	go func() {
		defer close(s.served)
		if err := s.http.Serve(bounded); !errors.Is(err, http.ErrServerClosed) {
			log.ErrorS(err, "metrics listener stopped", "endpoint", endpoint)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Close stops serving, closing every connection, and waits for the
// serving goroutine to end.
func (s *Server) Close() error {
	err := s.http.Close()
	<-s.served
	return err
}

// Handler serves GET (and HEAD) MetricsPath with what gatherer gathers,
// and GET / with a page naming it. Any other method answers 405, any other
// path 404: nothing here changes the agent.
func Handler(gatherer prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(http.MethodGet+" "+MetricsPath, promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: MaxScrapesInFlight,
		Timeout:             ScrapeTimeout,
	}))
	mux.HandleFunc(http.MethodGet+" /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "memif-agent metrics: GET %s (Prometheus text format)\n", MetricsPath)
	})
	return mux
}
