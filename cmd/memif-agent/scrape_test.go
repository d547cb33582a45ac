package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contivpp/memif-agent/plugins/metrics/listener"
)

func TestScrape(t *testing.T) {
	registry := prometheus.NewRegistry()
	registry.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "memif_agent_scrape_test", Help: "Test gauge."}))
	server := httptest.NewServer(listener.Handler(registry))
	t.Cleanup(server.Close)
	broken := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(broken.Close)
	cases := []struct {
		name       string
		args       []string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{"the metrics", []string{server.URL + "/metrics"}, 0, "memif_agent_scrape_test 0", ""},
		{"not found", []string{broken.URL + "/metrics"}, 1, "", "404 Not Found"},
		{"nothing listening", []string{"http://127.0.0.1:1/metrics"}, 1, "", "connection refused"},
		{"not an http URL", []string{"10.0.0.5:9752"}, 2, "", "want an http URL"},
		{"no URL", nil, 2, "", "Usage: memif-agent scrape"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := runScrape(tc.args, &stdout, &stderr)
			if status != tc.wantStatus || !strings.Contains(stdout.String(), tc.wantOut) || !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("scrape %v = %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, status, stdout.String(), stderr.String(), tc.wantStatus, tc.wantOut, tc.wantErr)
			}
		})
	}
}
