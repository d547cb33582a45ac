package nodeapi

import (
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

// LoopHistory serves the controller event loop's history to the API.
func LoopHistory(history *eventloop.History) server.EventHistory {
	return loopHistory{history: history}
}

type loopHistory struct {
	history *eventloop.History
}

// EventHistory implements server.EventHistory.
func (h loopHistory) EventHistory(query server.HistoryQuery) []server.EventRecord {
	var records []server.EventRecord
	for _, rec := range h.history.All() {
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
