package checkpoint

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode checks that no file content panics Decode, that every refusal
// is a *CorruptError, and that what Decode accepts survives a round trip.
func FuzzDecode(f *testing.F) {
	valid, err := Encode(sampleData())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Fuzz(func(t *testing.T, content []byte) {
		data, err := Decode("fuzz", content)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := Encode(data)
		if err != nil {
			t.Fatalf("Encode of decoded data: %v", err)
		}
		roundTrip, err := Decode("fuzz", again)
		if err != nil {
			t.Fatalf("Decode of re-encoded data: %v", err)
		}
		if len(data.Allocations) == 0 && len(roundTrip.Allocations) == 0 {
			return
		}
		if !reflect.DeepEqual(roundTrip, data) {
			t.Fatalf("round trip changed the data: %+v != %+v", roundTrip, data)
		}
	})
}

// FuzzDecodeJournal checks that no journal content panics decodeJournal,
// that every refusal and skipped stretch is a *CorruptError, and that the records it accepts
// encode back to a journal that decodes to the same records.
func FuzzDecodeJournal(f *testing.F) {
	const generation = 7
	valid := encodeJournalHeader(generation)
	for _, r := range []journalRecord{{Put: sampleData().Allocations}, {Delete: []string{"memif-000-a1b2c3d4"}}} {
		var err error
		if valid, err = appendRecord(valid, r); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-5])
	f.Add(encodeJournalHeader(generation + 1))
	f.Add([]byte("MEMIFJ01"))
	f.Fuzz(func(t *testing.T, content []byte) {
		records, _, skipped, err := decodeJournal("fuzz", content, generation)
		for _, problem := range append(skipped, err) {
			if problem != nil && !errors.Is(problem, ErrCorrupt) {
				t.Fatalf("decodeJournal problem %v is not ErrCorrupt", problem)
			}
		}
		if err != nil {
			return
		}
		again := encodeJournalHeader(generation)
		for _, r := range records {
			if again, err = appendRecord(again, r); err != nil {
				t.Fatalf("encode of a decoded record: %v", err)
			}
		}
		roundTrip, torn, skipped, err := decodeJournal("fuzz", again, generation)
		if err != nil || torn != 0 || len(skipped) != 0 {
			t.Fatalf("decode of re-encoded records: torn at %d, skipped %v, %v", torn, skipped, err)
		}
		if !reflect.DeepEqual(roundTrip, records) {
			t.Fatalf("round trip changed the records: %+v != %+v", roundTrip, records)
		}
	})
}
