package eventloop

import (
	"sync"
	"time"
)

// Record is one processed event in the history.
type Record struct {
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

// History keeps the last records in a ring, oldest first. It is safe for
// concurrent use: the loop writes, HTTP handlers read.
type History struct {
	mu      sync.Mutex
	records []Record
	// next is where the next record goes once the ring is full.
	next int
}

func newHistory(limit int) *History {
	return &History{records: make([]Record, 0, limit)}
}

func (h *History) add(rec Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.records) < cap(h.records) {
		h.records = append(h.records, rec)
		return
	}
	h.records[h.next] = rec
	h.next = (h.next + 1) % len(h.records)
}

// All returns a copy of every kept record, oldest first.
func (h *History) All() []Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	all := make([]Record, 0, len(h.records))
	all = append(all, h.records[h.next:]...)
	return append(all, h.records[:h.next]...)
}

// BySeqNum returns the record of event seqNum, if still kept.
func (h *History) BySeqNum(seqNum uint64) (Record, bool) {
	for _, rec := range h.All() {
		if rec.SeqNum == seqNum {
			return rec, true
		}
	}
	return Record{}, false
}

// Between returns the records of events that started within [since, until];
// a zero bound is open.
func (h *History) Between(since, until time.Time) []Record {
	var found []Record
	for _, rec := range h.All() {
		if !since.IsZero() && rec.Start.Before(since) {
			continue
		}
		if !until.IsZero() && rec.Start.After(until) {
			continue
		}
		found = append(found, rec)
	}
	return found
}
