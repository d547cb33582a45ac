package listener_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/plugins/metrics/listener"
	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// serve starts the listener on the address Load makes of podIP and a free
// port, over a registry holding one counter, and returns its base URL.
func serve(t *testing.T, podIP string) string {
	t.Helper()
	registry := prometheus.NewRegistry()
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "memif_agent_test_total", Help: "Test counter."})
	registry.MustRegister(counter)
	counter.Add(3)
	cfg, _, err := listener.Load("", podIP)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Port, err = strconv.Atoi(loopback.FreePort(t)); err != nil {
		t.Fatal(err)
	}
	server, err := listener.Start(cfg.Endpoint(), registry, testlog.FailOnError(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Close(); err != nil {
			t.Error(err)
		}
	})
	return "http://" + server.Addr().String()
}

func request(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestOnlyReadEndpoints: GET /metrics and GET / answer; every method that
// could change something answers 405 and every other path 404.
func TestOnlyReadEndpoints(t *testing.T) {
	base := serve(t, "")
	cases := []struct {
		method, path string
		wantStatus   int
		wantBody     string
	}{
		{http.MethodGet, "/metrics", http.StatusOK, "memif_agent_test_total 3"},
		{http.MethodHead, "/metrics", http.StatusOK, ""},
		{http.MethodGet, "/", http.StatusOK, "GET /metrics"},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed, ""},
		{http.MethodPut, "/metrics", http.StatusMethodNotAllowed, ""},
		{http.MethodDelete, "/metrics", http.StatusMethodNotAllowed, ""},
		{http.MethodPost, "/", http.StatusMethodNotAllowed, ""},
		{http.MethodPost, "/controller/resync", http.StatusNotFound, ""},
		{http.MethodGet, "/controller/event-history", http.StatusNotFound, ""},
		{http.MethodGet, "/scheduler/dump", http.StatusNotFound, ""},
		{http.MethodPut, "/log/default/debug", http.StatusNotFound, ""},
		{http.MethodGet, "/readiness", http.StatusNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			status, body := request(t, tc.method, base+tc.path)
			if status != tc.wantStatus || !strings.Contains(body, tc.wantBody) {
				t.Errorf("%s %s = %d %q, want %d with %q", tc.method, tc.path, status, body, tc.wantStatus, tc.wantBody)
			}
		})
	}
}

// TestServesOnThePodIP: without metrics.conf's address the listener is
// on $MEMIF_AGENT_POD_IP's address only (127.0.0.2 here: another address
// of the loopback network, standing for the pod's).
func TestServesOnThePodIP(t *testing.T) {
	base := serve(t, "127.0.0.2")
	if !strings.HasPrefix(base, "http://127.0.0.2:") {
		t.Fatalf("listening at %s, want 127.0.0.2", base)
	}
	if status, body := request(t, http.MethodGet, base+"/metrics"); status != http.StatusOK || !strings.Contains(body, "memif_agent_test_total 3") {
		t.Errorf("GET /metrics on the pod IP = %d %q", status, body)
	}
	other := strings.Replace(base, "127.0.0.2", "127.0.0.1", 1) + "/metrics"
	if resp, err := http.Get(other); err == nil {
		resp.Body.Close()
		t.Errorf("GET %s answered %d; want nothing listening on another address", other, resp.StatusCode)
	}
}

// TestSilentClientsAreCutOff: clients that connect and send nothing hold
// every connection the listener serves; they are cut off, and a scrape
// waiting behind them is then answered.
func TestSilentClientsAreCutOff(t *testing.T) {
	base := serve(t, "")
	host := strings.TrimPrefix(base, "http://")
	var silent []net.Conn
	for range listener.MaxConnections {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		silent = append(silent, conn)
	}
	if status, _ := request(t, http.MethodGet, base+"/metrics"); status != http.StatusOK {
		t.Fatalf("GET /metrics behind %d silent clients = %d", listener.MaxConnections, status)
	}
	cutOff := 0
	for _, conn := range silent {
		// The server closed it already, or closes it within its
		// header timeout: either way Read ends, long before this bound.
		if err := conn.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			cutOff++
		}
	}
	if cutOff != listener.MaxConnections {
		t.Errorf("%d of %d silent clients cut off by the server, want all", cutOff, listener.MaxConnections)
	}
}
