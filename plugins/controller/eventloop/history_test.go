package eventloop

import (
	"slices"
	"testing"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// TestHistorySelect: the one filter of the history, which the HTTP history
// and the node API both use.
func TestHistorySelect(t *testing.T) {
	start := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	history := newHistory(4)
	for seq := uint64(1); seq <= 6; seq++ {
		history.add(controllerapi.EventRecord{SeqNum: seq, Start: start.Add(time.Duration(seq) * time.Minute)})
	}
	at := func(seq int) time.Time { return start.Add(time.Duration(seq) * time.Minute) }
	cases := []struct {
		name  string
		query controllerapi.HistoryQuery
		want  []uint64
	}{
		{"everything kept", controllerapi.HistoryQuery{}, []uint64{3, 4, 5, 6}},
		{"after a sequence number", controllerapi.HistoryQuery{AfterSeqNum: 4}, []uint64{5, 6}},
		{"after the newest", controllerapi.HistoryQuery{AfterSeqNum: 6}, nil},
		{"since, inclusive", controllerapi.HistoryQuery{Since: at(4)}, []uint64{4, 5, 6}},
		{"until, inclusive", controllerapi.HistoryQuery{Until: at(4)}, []uint64{3, 4}},
		{"between", controllerapi.HistoryQuery{Since: at(4), Until: at(5)}, []uint64{4, 5}},
		{"last", controllerapi.HistoryQuery{Last: 2}, []uint64{5, 6}},
		{"last beyond what is kept", controllerapi.HistoryQuery{Last: 100}, []uint64{3, 4, 5, 6}},
		{"last of a selection", controllerapi.HistoryQuery{Until: at(5), Last: 1}, []uint64{5}},
		{"last after a sequence number", controllerapi.HistoryQuery{AfterSeqNum: 3, Last: 2}, []uint64{5, 6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []uint64
			for _, rec := range history.Select(tc.query) {
				got = append(got, rec.SeqNum)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Select(%+v) = %v, want %v", tc.query, got, tc.want)
			}
		})
	}
}
