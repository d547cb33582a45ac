package api

import "time"

// EventHistory is the history the event loop keeps of the events it
// processed, as readers (the node API, the HTTP history) see it.
type EventHistory interface {
	// EventHistory returns the kept records query selects, oldest first;
	// none while there is no loop yet.
	EventHistory(query HistoryQuery) []EventRecord
}

// HistoryQuery selects records of the event history; its zero value
// selects every kept record.
type HistoryQuery struct {
	// AfterSeqNum keeps the events with a higher sequence number.
	AfterSeqNum uint64
	// Since and Until keep the events that started within [Since, Until];
	// a zero bound is open.
	Since, Until time.Time
	// Last, when positive, keeps only the newest Last of the events the
	// other fields select.
	Last int
}

// Selects tells whether query selects rec, Last aside.
func (q HistoryQuery) Selects(rec EventRecord) bool {
	return rec.SeqNum > q.AfterSeqNum &&
		(q.Since.IsZero() || !rec.Start.Before(q.Since)) &&
		(q.Until.IsZero() || !rec.Start.After(q.Until))
}

// EventRecord is one processed event in the history.
type EventRecord struct {
	SeqNum      uint64          `json:"seqNum"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Method      string          `json:"method"`
	TxnType     string          `json:"txnType,omitempty"`
	Direction   string          `json:"direction,omitempty"`
	Handlers    []HandlerRecord `json:"handlers"`
	// Committed counts the values handed to the Committer; 0 when nothing
	// was committed.
	Committed int       `json:"committed"`
	Error     string    `json:"error,omitempty"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
}

// HandlerRecord is what one handler did with an event.
type HandlerRecord struct {
	Handler string `json:"handler"`
	// Action is "update", "resync" or "revert".
	Action string `json:"action"`
	Change string `json:"change,omitempty"`
	Error  string `json:"error,omitempty"`
}
