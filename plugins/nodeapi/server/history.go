package server

import "time"

// EventRecord is one processed controller event as the API shows it.
type EventRecord struct {
	Seq         uint64
	Name        string
	Description string
	Method      string
	TxnType     string
	Direction   string
	StartedAt   time.Time
	FinishedAt  time.Time
	Handlers    []HandlerRecord
	// Committed counts the values handed to the KV scheduler.
	Committed int
	// Error is the event's outcome; empty means success.
	Error string
}

// HandlerRecord is what one handler did with an event.
type HandlerRecord struct {
	Handler string
	// Action is "update", "resync" or "revert".
	Action string
	Change string
	// Error is the handler's error; empty means success.
	Error string
}

// HistoryQuery selects events from the history.
type HistoryQuery struct {
	// SinceSeq keeps only events with a larger sequence number.
	SinceSeq uint64
	// Last keeps at most the newest Last events; 0 keeps all.
	Last int
}

// EventHistory is the controller's bounded record of processed events.
type EventHistory interface {
	// EventHistory returns the events that match query, oldest first. It is
	// safe to call from any goroutine.
	EventHistory(query HistoryQuery) []EventRecord
}
