package server

import "github.com/contivpp/memif-agent/plugins/controller/eventloop"

// HistorySource is the controller, whose event loop keeps the history of
// processed events (the controller plugin and *eventloop.Loop are one).
type HistorySource interface {
	// History returns the loop's history; nil while there is no loop yet.
	History() *eventloop.History
}

// selectEvents returns the records of history with a sequence number above
// sinceSeq, oldest first; last > 0 keeps only the newest last of them.
func selectEvents(history *eventloop.History, sinceSeq uint64, last int) []eventloop.Record {
	var records []eventloop.Record
	for _, rec := range history.All() {
		if rec.SeqNum > sinceSeq {
			records = append(records, rec)
		}
	}
	if last > 0 && len(records) > last {
		records = records[len(records)-last:]
	}
	return records
}
