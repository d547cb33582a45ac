package listener_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/plugins/metrics/listener"
	"github.com/contivpp/memif-agent/test/kit/connflood"
	"github.com/contivpp/memif-agent/test/kit/loopback"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

func TestMain(m *testing.M) {
	connflood.RunIfAsked()
	os.Exit(m.Run())
}

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

// The flood of TestScrapesAnsweredDuringAFlood.
const (
	// floodConnections is how many connections the user nobody holds
	// and reopens: as many as the finding of issue 36 held.
	floodConnections = 300
	// scrapes is how many scrapes are asked during the flood, one after
	// another, each on a new connection.
	scrapes = 5
	// scrapeTimeout is Prometheus's default scrape_timeout: a scrape not
	// answered within it is lost.
	scrapeTimeout = 10 * time.Second
)

// TestScrapesAnsweredDuringAFlood: while the user nobody holds 300
// connections to the listener, sending nothing and reopening each one the
// listener closes, every scrape is answered within Prometheus's scrape
// timeout, whether the flood comes from the scraper's own address (a
// local user, as the listener is on the node's IP) or from another (a
// pod). With the connections limited by making new ones wait
// (netutil.LimitListener), each scrape waited in the kernel's accept
// queue behind the flood's connections and none was answered.
func TestScrapesAnsweredDuringAFlood(t *testing.T) {
	cases := []struct {
		name string
		// floodSource is the flood's local address; "" is the scraper's.
		floodSource string
	}{
		{"from the scraper's address", ""},
		{"from another address", "127.0.0.3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := serve(t, "")
			flood := connflood.Start(t, connflood.Spec{Network: "tcp", Address: strings.TrimPrefix(base, "http://"), Connections: floodConnections, Source: tc.floodSource})
			client := http.Client{Timeout: scrapeTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
			answered := 0
			for i := range scrapes {
				resp, err := client.Get(base + "/metrics")
				if err != nil {
					t.Errorf("scrape %d of %d during the flood: %v", i+1, scrapes, err)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "memif_agent_test_total 3") {
					t.Errorf("scrape %d of %d during the flood = %d %.200q (%v)", i+1, scrapes, resp.StatusCode, body, err)
					continue
				}
				answered++
			}
			t.Logf("%d of %d scrapes answered; the flood opened %d connections in all", answered, scrapes, flood.Stop(t))
		})
	}
}
