package eventloop

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// newHTTPTestLoop runs a loop that has processed the startup resync
// (seqNum 1) and events A, B, C (seqNums 2-4), served over HTTP.
func newHTTPTestLoop(t *testing.T) (*Loop, *httptest.Server) {
	t.Helper()
	loop := newTestLoop(t, testConfig(), Deps{Handlers: []controllerapi.EventHandler{&testHandler{name: "h", calls: &callLog{}}}})
	loop.Start()
	for _, name := range []string{"A", "B", "C"} {
		event := newEvent(name, controllerapi.BestEffort, controllerapi.Forward)
		mustPush(t, loop, event)
		if err := mustWait(t, event); err != nil {
			t.Fatalf("event %s failed: %v", name, err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle(HistoryPath, loop.HistoryHandler())
	mux.Handle(ResyncPath, loop.ResyncHandler())
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	return loop, server
}

func TestEventHistoryOverHTTP(t *testing.T) {
	loop, server := newHTTPTestLoop(t)
	recB, _ := loop.history.BySeqNum(3)
	tests := []struct {
		name        string
		query       url.Values
		wantStatus  int
		wantSeqNums []uint64
		wantInBody  string
	}{
		{name: "everything", wantStatus: http.StatusOK, wantSeqNums: []uint64{1, 2, 3, 4}},
		{name: "by seqNum", query: url.Values{"seqNum": {"3"}}, wantStatus: http.StatusOK, wantSeqNums: []uint64{3}},
		{name: "last 2", query: url.Values{"last": {"2"}}, wantStatus: http.StatusOK, wantSeqNums: []uint64{3, 4}},
		{name: "last more than kept", query: url.Values{"last": {"10"}}, wantStatus: http.StatusOK, wantSeqNums: []uint64{1, 2, 3, 4}},
		{name: "time range of one event",
			query:      url.Values{"since": {recB.Start.Format(time.RFC3339Nano)}, "until": {recB.Start.Format(time.RFC3339Nano)}},
			wantStatus: http.StatusOK, wantSeqNums: []uint64{3}},
		{name: "since only", query: url.Values{"since": {recB.Start.Format(time.RFC3339Nano)}},
			wantStatus: http.StatusOK, wantSeqNums: []uint64{3, 4}},
		{name: "time range then last", query: url.Values{"until": {recB.Start.Format(time.RFC3339Nano)}, "last": {"1"}},
			wantStatus: http.StatusOK, wantSeqNums: []uint64{3}},
		{name: "empty time range", query: url.Values{"until": {"2000-01-01T00:00:00Z"}}, wantStatus: http.StatusOK,
			wantSeqNums: []uint64{}},
		{name: "unknown seqNum", query: url.Values{"seqNum": {"99"}}, wantStatus: http.StatusNotFound, wantInBody: "seqNum 99"},
		{name: "bad seqNum", query: url.Values{"seqNum": {"x"}}, wantStatus: http.StatusBadRequest, wantInBody: "seqNum"},
		{name: "bad since", query: url.Values{"since": {"yesterday"}}, wantStatus: http.StatusBadRequest, wantInBody: "since"},
		{name: "bad until", query: url.Values{"until": {"1700000000"}}, wantStatus: http.StatusBadRequest, wantInBody: "until"},
		{name: "bad last", query: url.Values{"last": {"-1"}}, wantStatus: http.StatusBadRequest, wantInBody: "last"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(server.URL + HistoryPath + "?" + tc.query.Encode())
			if err != nil {
				t.Fatalf("GET history: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d (%s), want %d", resp.StatusCode, body, tc.wantStatus)
			}
			if !strings.Contains(string(body), tc.wantInBody) {
				t.Errorf("body %q does not mention %q", body, tc.wantInBody)
			}
			if tc.wantSeqNums == nil {
				return
			}
			var records []controllerapi.EventRecord
			if err := json.Unmarshal(body, &records); err != nil {
				t.Fatalf("decode %s: %v", body, err)
			}
			got := []uint64{}
			for _, rec := range records {
				got = append(got, rec.SeqNum)
			}
			if !slices.Equal(got, tc.wantSeqNums) {
				t.Errorf("seqNums = %v, want %v", got, tc.wantSeqNums)
			}
		})
	}
}

func TestHistoryRecordContent(t *testing.T) {
	_, server := newHTTPTestLoop(t)
	resp, err := http.Get(server.URL + HistoryPath + "?seqNum=2")
	if err != nil {
		t.Fatalf("GET history: %v", err)
	}
	defer resp.Body.Close()
	var records []controllerapi.EventRecord
	if err := json.NewDecoder(resp.Body).Decode(&records); err != nil {
		t.Fatalf("decode: %v", err)
	}
	rec := records[0]
	want := controllerapi.HandlerRecord{Handler: "h", Action: "update", Change: "put " + ifKey("h", "A")}
	if rec.Name != "A" || rec.Method != "update" || rec.TxnType != "best-effort" || rec.Direction != "forward" ||
		len(rec.Handlers) != 1 || rec.Handlers[0] != want || rec.Committed != 1 || rec.End.Before(rec.Start) {
		t.Errorf("record = %+v, want event A, update, best-effort, forward, handler change %+v, 1 committed", rec, want)
	}
}

func TestResyncOverHTTP(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		wantStatus int
		wantResync bool
	}{
		{name: "POST runs a resync", method: http.MethodPost, wantStatus: http.StatusOK, wantResync: true},
		{name: "GET is refused", method: http.MethodGet, wantStatus: http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loop, server := newHTTPTestLoop(t)
			req, _ := http.NewRequest(tc.method, server.URL+ResyncPath, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s resync: %v", tc.method, err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			records := loop.history.All()
			gotResync := records[len(records)-1].Name == RequestedResyncName
			if gotResync != tc.wantResync {
				t.Errorf("last event %s, want a requested resync: %v", records[len(records)-1].Name, tc.wantResync)
			}
		})
	}
}

func TestResyncOverHTTPReportsFailure(t *testing.T) {
	handler := &testHandler{name: "h", calls: &callLog{}, failResync: func(n int) bool { return n > 1 }}
	cfg := testConfig()
	cfg.HealingDelay, cfg.HealingMaxDelay = configfile.Duration(time.Hour), configfile.Duration(time.Hour)
	loop := newTestLoop(t, cfg, Deps{Handlers: []controllerapi.EventHandler{handler}})
	loop.Start()
	server := httptest.NewServer(loop.ResyncHandler())
	defer server.Close()
	resp, err := http.Post(server.URL, "", nil)
	if err != nil {
		t.Fatalf("POST resync: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), errHandlerFailed.Error()) {
		t.Errorf("POST resync = %d %q, want 500 with the handler's error", resp.StatusCode, body)
	}
	if got := loop.Health().State; got != Unhealthy {
		t.Errorf("health after a failed resync = %s, want unhealthy", got)
	}
}
