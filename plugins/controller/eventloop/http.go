package eventloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// HTTP paths of the controller's REST API.
const (
	HistoryPath = "/controller/event-history"
	ResyncPath  = "/controller/resync"
)

// HistoryHandler serves GET HistoryPath: the event history as a JSON array,
// oldest first. Query parameters, all optional: seqNum=N (one event),
// since=RFC3339 and until=RFC3339 (events started in that range), last=N
// (the N most recent, applied after since/until).
func (l *Loop) HistoryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		records, status, err := l.queryHistory(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), status)
			return
		}
		writeJSON(w, http.StatusOK, records)
	})
}

// ResyncHandler serves POST ResyncPath: runs a full resync and answers when
// it is done, 200 on success, 500 with the error otherwise.
func (l *Loop) ResyncHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "use POST to trigger a resync", http.StatusMethodNotAllowed)
			return
		}
		if err := l.Resync(r.Context()); err != nil {
			http.Error(w, fmt.Sprintf("resync failed: %v", err), http.StatusInternalServerError)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"result": "resync done"})
	})
}

func (l *Loop) queryHistory(query url.Values) ([]controllerapi.EventRecord, int, error) {
	if text := query.Get("seqNum"); text != "" {
		seqNum, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("query parameter seqNum=%q: want a non-negative integer", text)
		}
		rec, found := l.history.BySeqNum(seqNum)
		if !found {
			return nil, http.StatusNotFound, fmt.Errorf("event seqNum %d is not in the history (not processed yet, or older than the last %d events)",
				seqNum, l.cfg.HistorySize)
		}
		return []controllerapi.EventRecord{rec}, http.StatusOK, nil
	}
	since, errSince := parseTimeParam(query, "since")
	until, errUntil := parseTimeParam(query, "until")
	if err := errors.Join(errSince, errUntil); err != nil {
		return nil, http.StatusBadRequest, err
	}
	selection := controllerapi.HistoryQuery{Since: since, Until: until}
	if text := query.Get("last"); text != "" {
		last, err := strconv.Atoi(text)
		if err != nil || last < 0 {
			return nil, http.StatusBadRequest, fmt.Errorf("query parameter last=%q: want a non-negative integer", text)
		}
		selection.Last = last
	}
	records := l.history.Select(selection)
	if records == nil {
		records = []controllerapi.EventRecord{}
	}
	return records, http.StatusOK, nil
}

func parseTimeParam(query url.Values, name string) (time.Time, error) {
	text := query.Get(name)
	if text == "" {
		return time.Time{}, nil
	}
	parsed, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, fmt.Errorf("query parameter %s=%q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", name, text)
	}
	return parsed, nil
}

func writeJSON(w http.ResponseWriter, status int, body interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// The client may be gone; there is no one left to tell.
	_ = json.NewEncoder(w).Encode(body)
}
