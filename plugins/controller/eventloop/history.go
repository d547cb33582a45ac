package eventloop

import (
	"errors"
	"slices"
	"sync"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// History keeps the last records in a ring, oldest first. It is safe for
// concurrent use: the loop writes, HTTP handlers read.
type History struct {
	mu      sync.Mutex
	records []controllerapi.EventRecord
	// next is where the next record goes once the ring is full.
	next int
}

func newHistory(limit int) *History {
	return &History{records: make([]controllerapi.EventRecord, 0, limit)}
}

func (h *History) add(rec controllerapi.EventRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.records) < cap(h.records) {
		h.records = append(h.records, rec)
		return
	}
	h.records[h.next] = rec
	h.next = (h.next + 1) % len(h.records)
}

// amend adds err, a failed commit, to the records of events seqNums still
// kept.
func (h *History) amend(seqNums []uint64, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.records {
		if slices.Contains(seqNums, h.records[i].SeqNum) {
			h.records[i].Error = errors.Join(errorOf(h.records[i].Error), err).Error()
		}
	}
}

// errorOf turns a record's error back into an error, nil for none.
func errorOf(text string) error {
	if text == "" {
		return nil
	}
	return errors.New(text)
}

// All returns a copy of every kept record, oldest first.
func (h *History) All() []controllerapi.EventRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	all := make([]controllerapi.EventRecord, 0, len(h.records))
	all = append(all, h.records[h.next:]...)
	return append(all, h.records[:h.next]...)
}

// BySeqNum returns the record of event seqNum, if still kept.
func (h *History) BySeqNum(seqNum uint64) (controllerapi.EventRecord, bool) {
	for _, rec := range h.All() {
		if rec.SeqNum == seqNum {
			return rec, true
		}
	}
	return controllerapi.EventRecord{}, false
}

// Select returns the kept records query selects, oldest first.
func (h *History) Select(query controllerapi.HistoryQuery) []controllerapi.EventRecord {
	var found []controllerapi.EventRecord
	for _, rec := range h.All() {
		if query.Selects(rec) {
			found = append(found, rec)
		}
	}
	if query.Last > 0 && len(found) > query.Last {
		found = found[len(found)-query.Last:]
	}
	return found
}
