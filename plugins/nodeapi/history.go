package nodeapi

import (
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

// HistorySource is what the API needs of the controller: its event loop's
// history (the controller plugin and *eventloop.Loop have it).
type HistorySource interface {
	// History returns the loop's history; nil while there is no loop yet.
	History() *eventloop.History
}

// LoopHistory serves the controller event loop's history to the API. The
// source is asked at every request, so it may be given before the
// controller has created its loop.
func LoopHistory(source HistorySource) server.EventHistory {
	return loopHistory{source: source}
}

type loopHistory struct {
	source HistorySource
}

// EventHistory implements server.EventHistory.
func (h loopHistory) EventHistory(query server.HistoryQuery) []server.EventRecord {
	history := h.source.History()
	if history == nil {
		return nil
	}
	var records []server.EventRecord
	for _, rec := range history.All() {
		if rec.SeqNum > query.SinceSeq {
			records = append(records, toEventRecord(rec))
		}
	}
	if query.Last > 0 && len(records) > query.Last {
		records = records[len(records)-query.Last:]
	}
	return records
}

func toEventRecord(rec eventloop.Record) server.EventRecord {
	out := server.EventRecord{
		Seq:         rec.SeqNum,
		Name:        rec.Name,
		Description: rec.Description,
		Method:      rec.Method,
		TxnType:     rec.TxnType,
		Direction:   rec.Direction,
		StartedAt:   rec.Start,
		FinishedAt:  rec.End,
		Committed:   rec.Committed,
		Error:       rec.Error,
	}
	for _, handler := range rec.Handlers {
		out.Handlers = append(out.Handlers, server.HandlerRecord{
			Handler: handler.Handler,
			Action:  handler.Action,
			Change:  handler.Change,
			Error:   handler.Error,
		})
	}
	return out
}
